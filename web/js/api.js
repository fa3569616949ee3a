// The console's client for the gateway that served it: the console token, the session's
// tools, conversations, and the model (through /v1/chat/completions, streamed or not).
//
// The API key is used once, to obtain a console token bound to one session; only the
// token is kept (localStorage), so code run in page mode can reach the proxy, the model
// and this session's tools, and nothing else of the gateway.

import { accumulate, finalize, messageFromCompletion, newAccumulator, splitSse } from './sse.js';

const TOKEN_KEY = 'tabgate.console.token';
const SESSION_KEY = 'tabgate.console.session';

/** A failed gateway call: HTTP status, the error's stable code and message. */
export class GatewayError extends Error {
  constructor(status, code, message, body) {
    super(message);
    this.name = 'GatewayError';
    this.status = status;
    this.code = code;
    this.body = body;
  }
}

export class Gateway {
  constructor(origin, storage) {
    this.origin = origin;
    this.storage = storage;
    this.token = storage.getItem(TOKEN_KEY) || '';
    this.sessionId = storage.getItem(SESSION_KEY) || '';
  }

  get connected() {
    return Boolean(this.token);
  }

  /** Exchanges the API key for a console token (for the last session when it still exists). */
  async connect(apiKey) {
    const tryConnect = (body) =>
      fetch(`${this.origin}/v1/console/token`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    let r = await tryConnect(this.sessionId ? { session_id: this.sessionId } : {});
    if (r.status === 404 && this.sessionId) r = await tryConnect({});
    const body = await r.json().catch(() => ({}));
    if (!r.ok) throw new GatewayError(r.status, body.error?.code || 'error', body.error?.message || r.statusText, body);
    this.token = body.token;
    this.sessionId = body.session_id;
    this.storage.setItem(TOKEN_KEY, this.token);
    this.storage.setItem(SESSION_KEY, this.sessionId);
    return body;
  }

  /** Forgets the token (the session stays, for the next connect). */
  disconnect() {
    this.token = '';
    this.storage.removeItem(TOKEN_KEY);
  }

  async request(method, path, body) {
    const init = { method, headers: { authorization: `Bearer ${this.token}` } };
    if (body !== undefined) {
      init.headers['content-type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    const r = await fetch(`${this.origin}${path}`, init);
    const text = await r.text();
    let v = null;
    try {
      v = text ? JSON.parse(text) : null;
    } catch {
      v = null;
    }
    if (!r.ok) {
      const e = (v && v.error) || {};
      throw new GatewayError(r.status, e.code || 'error', e.message || `${r.status} ${r.statusText}`, v);
    }
    return v;
  }

  session() {
    return this.request('GET', '/v1/console/session');
  }

  async tools() {
    return (await this.request('GET', '/v1/console/tools')).tools;
  }

  /** A tool call in the session; resolves to the gateway's body ({ok, result, text, …}) even on a tool error. */
  async callTool(name, args) {
    try {
      return await this.request('POST', `/v1/console/tools/${encodeURIComponent(name)}`, args || {});
    } catch (e) {
      if (e instanceof GatewayError && e.body) return e.body;
      throw e;
    }
  }

  async conversations() {
    return (await this.request('GET', '/v1/console/conversations')).conversations;
  }

  conversation(id) {
    return this.request('GET', `/v1/console/conversations/${encodeURIComponent(id)}`);
  }

  saveConversation(c, runnerMode) {
    return this.request('PUT', `/v1/console/conversations/${encodeURIComponent(c.id)}`, {
      title: c.title,
      runner_mode: runnerMode,
      messages: c.messages,
    });
  }

  deleteConversation(id) {
    return this.request('DELETE', `/v1/console/conversations/${encodeURIComponent(id)}`);
  }

  async models() {
    return this.request('GET', '/v1/models');
  }

  /**
   * One chat completion; resolves to the assistant message. With `stream`, `onText` gets
   * the text so far as it arrives.
   */
  async chat({ messages, tools, model, stream, onText }) {
    const body = { messages, tools, stream: Boolean(stream) };
    if (model) body.model = model;
    if (!tools || tools.length === 0) delete body.tools;
    const r = await fetch(`${this.origin}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${this.token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (!r.ok) {
      const v = await r.json().catch(() => ({}));
      throw new GatewayError(r.status, v.error?.code || 'error', v.error?.message || `${r.status} ${r.statusText}`, v);
    }
    if (!stream || !(r.headers.get('content-type') || '').includes('text/event-stream')) {
      return messageFromCompletion(await r.json());
    }
    const acc = newAccumulator();
    const reader = r.body.getReader();
    const dec = new TextDecoder();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      const { data, rest } = splitSse(buf);
      buf = rest;
      for (const d of data) {
        if (d.trim() === '[DONE]') continue;
        try {
          accumulate(acc, JSON.parse(d));
        } catch {
          // a keep-alive or a malformed line: skip it
        }
      }
      if (onText) onText(acc.content);
    }
    // a last event without its blank line
    for (const d of splitSse(`${buf}\n\n`).data) {
      if (d.trim() === '[DONE]') continue;
      try {
        accumulate(acc, JSON.parse(d));
      } catch {
        // malformed tail: skip it
      }
    }
    return finalize(acc);
  }
}
