// Pieces both runners share (the Web Worker and the page's main thread): turning a
// returned value or thrown error into text, console capture, and adding the console's
// credentials to requests for the gateway's proxy.
//
// Pure functions, no DOM (a DOM node is recognised by duck typing).

/** The longest serialised value, in characters. */
export const MAX_VALUE_CHARS = 20000;

/** A returned value as text: strings as they are, elements as HTML, the rest as JSON. */
export function serializeValue(v) {
  if (v === undefined) return 'undefined';
  if (typeof v === 'string') return v;
  if (typeof v === 'function') return `[function ${v.name || 'anonymous'}]`;
  if (typeof v === 'bigint') return `${v}n`;
  if (v && typeof v === 'object' && typeof v.outerHTML === 'string') return v.outerHTML;
  try {
    const seen = new WeakSet();
    const s = JSON.stringify(
      v,
      (k, x) => {
        if (typeof x === 'bigint') return `${x}n`;
        if (x && typeof x === 'object') {
          if (seen.has(x)) return '[circular]';
          seen.add(x);
          if (x instanceof Error) return `${x.name}: ${x.message}`;
          if (x instanceof Map) return Object.fromEntries(x);
          if (x instanceof Set) return [...x];
        }
        return x;
      },
      2,
    );
    return s === undefined ? String(v) : s;
  } catch {
    return String(v);
  }
}

/** Cuts a serialised value. */
export function clip(s, max = MAX_VALUE_CHARS) {
  return s.length > max ? `${s.slice(0, max)}… [${s.length - max} more characters cut]` : s;
}

const CORS_HINT =
  " (a cross-origin fetch failing like this is the browser's CORS block: fetch('/v1/proxy?url=' + encodeURIComponent(url)) instead)";

/** A thrown value as `Name: message`, with a hint for the browser's opaque CORS failure. */
export function describeError(e) {
  let s;
  if (e && typeof e === 'object' && 'message' in e) s = `${e.name || 'Error'}: ${e.message}`;
  else s = `Uncaught ${serializeValue(e)}`;
  if (/Failed to fetch|NetworkError when attempting to fetch|Load failed/.test(s)) s += CORS_HINT;
  return s;
}

/** A console that records what the code logs (and forwards it to `target` when given). */
export function captureConsole(logs, target) {
  const rec =
    (level) =>
    (...args) => {
      const line = args.map((a) => (typeof a === 'string' ? a : serializeValue(a))).join(' ');
      if (logs.length < 200) logs.push(level === 'log' ? line : `[${level}] ${line}`);
      if (target && typeof target[level] === 'function') target[level](...args);
    };
  return { log: rec('log'), info: rec('info'), warn: rec('warn'), error: rec('error'), debug: rec('debug') };
}

/** True for a URL (resolved against `origin`) that is the gateway's proxy. */
export function isProxyUrl(url, origin) {
  try {
    const u = new URL(url, origin);
    return u.origin === new URL(origin).origin && (u.pathname === '/v1/proxy' || u.pathname === '/v1/proxy/log');
  } catch {
    return false;
  }
}

/**
 * The `init` for a fetch of `url`: with `Authorization: Bearer <token>` added when it goes
 * to the gateway's proxy and carries no credentials of its own; other requests unchanged.
 */
export function authorizeInit(url, init, { token, origin }) {
  if (!token || !isProxyUrl(url, origin)) return init;
  const headers = new Headers((init && init.headers) || undefined);
  if (!headers.has('authorization')) headers.set('authorization', `Bearer ${token}`);
  return { ...(init || {}), headers };
}

/** A fetch that adds the console's token to proxy requests (see authorizeInit). */
export function proxyAwareFetch(realFetch, getAuth) {
  return function fetch(input, init) {
    const auth = getAuth();
    if (typeof input === 'string' || input instanceof URL) {
      return realFetch(input, authorizeInit(String(input), init, auth));
    }
    if (input && typeof input.url === 'string' && isProxyUrl(input.url, auth.origin) && auth.token) {
      const req = new Request(input, init);
      if (!req.headers.has('authorization')) req.headers.set('authorization', `Bearer ${auth.token}`);
      return realFetch(req);
    }
    return realFetch(input, init);
  };
}

/** The URL of the proxy for `url`. */
export function proxyUrl(url) {
  return `/v1/proxy?url=${encodeURIComponent(url)}`;
}
