// What both runners share: value and error text, the proxy credentials.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  authorizeInit,
  captureConsole,
  describeError,
  isProxyUrl,
  proxyAwareFetch,
  proxyUrl,
  serializeValue,
} from '../js/runner-shared.js';

const origin = 'http://127.0.0.1:7878';

test('values as text', () => {
  assert.equal(serializeValue(undefined), 'undefined');
  assert.equal(serializeValue('undefined'), 'undefined');
  assert.equal(serializeValue({ a: [1, 2] }), '{\n  "a": [\n    1,\n    2\n  ]\n}');
  const c = { n: 1 };
  c.self = c;
  assert.match(serializeValue(c), /\[circular\]/);
  assert.equal(serializeValue(new Map([['k', 1]])), '{\n  "k": 1\n}');
  assert.equal(serializeValue({ outerHTML: '<button id="send">Send</button>' }), '<button id="send">Send</button>');
  assert.equal(serializeValue(10n), '10n');
});

test('errors as text, with the CORS hint for an opaque fetch failure', () => {
  let e;
  try {
    // eslint-disable-next-line no-undef
    document.title;
  } catch (x) {
    e = x;
  }
  assert.equal(describeError(e), 'ReferenceError: document is not defined');
  const cors = describeError(new TypeError('Failed to fetch'));
  assert.match(cors, /^TypeError: Failed to fetch \(a cross-origin fetch failing like this is the browser's CORS block/);
  assert.match(cors, /\/v1\/proxy\?url=/);
  assert.equal(describeError('boom'), 'Uncaught boom');
});

test('console capture', () => {
  const logs = [];
  const con = captureConsole(logs);
  con.log('a', { b: 1 });
  con.warn('w');
  assert.deepEqual(logs, ['a {\n  "b": 1\n}', '[warn] w']);
});

test('only requests to the gateway proxy get the token', async () => {
  assert.ok(isProxyUrl('/v1/proxy?url=x', origin));
  assert.ok(isProxyUrl(`${origin}/v1/proxy?url=x`, origin));
  assert.ok(!isProxyUrl('http://localhost:7878/v1/proxy?url=x', origin), 'another origin');
  assert.ok(!isProxyUrl('/v1/sessions', origin));
  const auth = { token: 'tgc_t', origin };
  const init = authorizeInit('/v1/proxy?url=x', { method: 'GET' }, auth);
  assert.equal(init.headers.get('authorization'), 'Bearer tgc_t');
  assert.equal(init.method, 'GET');
  const own = authorizeInit('/v1/proxy?url=x', { headers: { Authorization: 'Bearer mine' } }, auth);
  assert.equal(own.headers.get('authorization'), 'Bearer mine');
  const other = { headers: { a: 'b' } };
  assert.equal(authorizeInit('https://api.github.com/x', other, auth), other);

  const seen = [];
  const f = proxyAwareFetch(async (input, i) => {
    seen.push([String(input.url || input), i ? new Headers(i.headers).get('authorization') : null]);
    return 'ok';
  }, () => auth);
  await f(proxyUrl('https://example.com/a b'));
  await f('https://api.github.com/repos');
  assert.deepEqual(seen, [
    ['/v1/proxy?url=https%3A%2F%2Fexample.com%2Fa%20b', 'Bearer tgc_t'],
    ['https://api.github.com/repos', null],
  ]);
});
