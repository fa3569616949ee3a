// run_js in the runner mode the person selected:
// - isolated: a fresh module Web Worker per run, terminated when it outlives its timeout;
// - page: an async function on the console page's main thread, with the DOM, window and
//   window.__inpage__; a timeout only stops waiting (the main thread cannot be killed).
//
// Returns {ok, value | error, logs, mode, duration_ms}; never throws.

import { captureConsole, clip, describeError, serializeValue } from './runner-shared.js';

/** Default run_js timeout, ms. */
export const DEFAULT_TIMEOUT_MS = 15000;

const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor;

function runIsolated(code, timeoutMs, auth) {
  return new Promise((resolve) => {
    let worker;
    try {
      worker = new Worker(new URL('./runner-worker.js', import.meta.url), { type: 'module' });
    } catch (e) {
      resolve({ ok: false, error: `cannot start the Web Worker: ${describeError(e)}`, logs: [] });
      return;
    }
    const timer = setTimeout(() => {
      worker.terminate();
      resolve({
        ok: false,
        error: `Timeout: the Web Worker was killed after ${timeoutMs} ms (isolated mode)`,
        logs: [],
      });
    }, timeoutMs);
    worker.onmessage = (ev) => {
      clearTimeout(timer);
      worker.terminate();
      resolve(ev.data);
    };
    worker.onerror = (ev) => {
      clearTimeout(timer);
      worker.terminate();
      ev.preventDefault();
      resolve({ ok: false, error: `Error: ${ev.message || 'the worker failed to load'}`, logs: [] });
    };
    worker.postMessage({ code, token: auth.token, origin: auth.origin });
  });
}

async function runOnPage(code, timeoutMs, inpage) {
  const logs = [];
  const con = captureConsole(logs, globalThis.console);
  let fn;
  try {
    fn = new AsyncFunction('console', '__inpage__', String(code));
  } catch (e) {
    return { ok: false, error: describeError(e), logs };
  }
  let timer;
  const timeout = new Promise((resolve) => {
    timer = setTimeout(
      () =>
        resolve({
          ok: false,
          error: `Timeout: no result after ${timeoutMs} ms; page mode cannot stop code on the main thread, it may still be running`,
          logs,
        }),
      timeoutMs,
    );
  });
  const run = (async () => {
    try {
      const value = await fn(con, inpage);
      return { ok: true, value: clip(serializeValue(value)), logs };
    } catch (e) {
      return { ok: false, error: describeError(e), logs };
    }
  })();
  const r = await Promise.race([run, timeout]);
  clearTimeout(timer);
  return r;
}

/**
 * Runs `code` in `mode`.
 * @param {{mode: string, code: string, timeoutMs?: number, auth: {token: string, origin: string}, inpage?: object}} o
 */
export async function runJs(o) {
  const mode = o.mode === 'page' ? 'page' : 'isolated';
  const timeoutMs = Math.min(Math.max(Number(o.timeoutMs) || DEFAULT_TIMEOUT_MS, 100), 120000);
  const started = performance.now();
  const r = mode === 'page' ? await runOnPage(o.code, timeoutMs, o.inpage) : await runIsolated(o.code, timeoutMs, o.auth);
  return { ...r, mode, duration_ms: Math.round(performance.now() - started) };
}
