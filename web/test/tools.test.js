// Tool specs for the model, argument parsing, result text.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { describeRunJs } from '../js/prompts.js';
import {
  buildToolSpecs,
  formatGatewayResult,
  formatRunJsResult,
  parseToolArgs,
  truncate,
} from '../js/tools.js';

const catalogue = [
  { name: 'browser_navigate', description: 'Navigate', input_schema: { type: 'object', properties: { url: { type: 'string' } } } },
  { name: 'browser_snapshot', description: 'Snapshot', input_schema: { type: 'object', properties: {} } },
  { name: 'browser_click', description: 'Click', input_schema: { type: 'object', properties: { ref: { type: 'string' } }, required: ['ref'] } },
  { name: 'browser_console', description: 'Console', input_schema: { type: 'object' } },
];

test('run_js is described for the current mode; browser tools come from the catalogue', () => {
  const iso = buildToolSpecs({ runnerMode: 'isolated', catalogue });
  const page = buildToolSpecs({ runnerMode: 'page', catalogue });
  const names = iso.map((t) => t.function.name);
  assert.deepEqual(names, ['run_js', 'open_in_workspace', 'browser_snapshot', 'browser_click']);
  assert.equal(iso[0].function.description, describeRunJs('isolated'));
  assert.equal(page[0].function.description, describeRunJs('page'));
  assert.deepEqual(iso[0].function.parameters.required, ['code']);
  assert.deepEqual(iso[3].function.parameters, catalogue[2].input_schema);
  assert.ok(iso.every((t) => t.type === 'function'));
  assert.deepEqual(buildToolSpecs({ runnerMode: 'page' }).map((t) => t.function.name), ['run_js', 'open_in_workspace']);
});

test('arguments', () => {
  assert.deepEqual(parseToolArgs('{"code":"1"}'), { code: '1' });
  assert.deepEqual(parseToolArgs(''), {});
  assert.match(parseToolArgs('{nope').__error, /not valid JSON/);
  assert.match(parseToolArgs('[1]').__error, /JSON object/);
});

test('result text', () => {
  assert.equal(
    formatRunJsResult({ ok: false, mode: 'isolated', error: 'ReferenceError: document is not defined', logs: [] }),
    'mode: isolated\nerror: ReferenceError: document is not defined',
  );
  assert.equal(formatRunJsResult({ ok: true, mode: 'page', value: '42', logs: ['hi'] }), 'mode: page\nconsole:\nhi\nresult:\n42');
  assert.equal(formatGatewayResult({ ok: true, text: 'navigated' }), 'navigated');
  assert.equal(formatGatewayResult({ ok: false, error: { code: 'stale_ref', message: 'take a snapshot' } }), 'Error [stale_ref]: take a snapshot');
  assert.equal(formatGatewayResult({ ok: false, text: 'Error [x]: y', error: {} }), 'Error [x]: y');
  const long = truncate('x'.repeat(25), 10);
  assert.equal(long, `${'x'.repeat(10)}\n… [15 more characters cut]`);
});
