// run_js in isolated mode: a fresh module Web Worker per run (runner.js starts it and
// terminates it on timeout). No DOM here: `document`, `window` and `localStorage` do not
// exist, so code that reaches for them throws ReferenceError, which is reported as is.
//
// Message in:  {code, token, origin}
// Message out: {ok: true, value, logs} | {ok: false, error, logs}

import { captureConsole, clip, describeError, proxyAwareFetch, proxyUrl, serializeValue } from './runner-shared.js';

const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor;

self.onmessage = async (ev) => {
  const { code, token, origin } = ev.data || {};
  const auth = { token, origin };
  const realFetch = self.fetch.bind(self);
  self.fetch = proxyAwareFetch(realFetch, () => auth);
  self.proxyFetch = (url, init) => self.fetch(proxyUrl(url), init);
  const logs = [];
  const console = captureConsole(logs);
  try {
    const fn = new AsyncFunction('console', String(code));
    const value = await fn(console);
    self.postMessage({ ok: true, value: clip(serializeValue(value)), logs });
  } catch (e) {
    self.postMessage({ ok: false, error: describeError(e), logs });
  }
};
