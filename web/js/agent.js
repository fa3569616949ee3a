// The agent loop that runs in the page (seed 003, AgentRuntime): it builds each model
// request (core system prompt + the developer prompt for the current runner mode + the
// conversation + the tools for that mode), runs the tool calls the model makes, and tells
// the model when the person switched the runner mode.
//
// No DOM: everything the loop touches comes in as `deps`, so Node's test runner drives it
// with a scripted model.

import { CORE_SYSTEM_PROMPT, buildDeveloperPrompt, normalizeMode } from './prompts.js';
import { buildRunnerModeBadge, neutralizeUserText, stripUserContexts, wrapUserContexts } from './badge.js';
import { buildToolSpecs, parseToolArgs, truncate } from './tools.js';

/** Model requests per user message at most (each may carry several tool calls). */
export const MAX_STEPS = 12;

/** A new conversation id: `c_` and 20 random base-36 characters. */
export function newConversationId(random = Math.random) {
  let s = '';
  while (s.length < 20) s += Math.floor(random() * 36).toString(36);
  return `c_${s}`;
}

/** A title from the first user message: its text without badges, at most 60 characters. */
export function titleFrom(content) {
  const t = stripUserContexts(content).replace(/\s+/g, ' ').trim();
  return t.length > 60 ? `${t.slice(0, 59)}…` : t || 'New conversation';
}

/**
 * @typedef {object} AgentDeps
 * @property {() => string} getRunnerMode          the mode selected in settings now
 * @property {() => string} [getLocale]            'en' | 'zh'
 * @property {() => Array} [getCatalogue]          the gateway's tool catalogue
 * @property {() => object} [getWorkspace]         {url, title} of the workspace tab
 * @property {() => number} [getProxyMaxBytes]
 * @property {(req: {messages: Array, tools: Array}) => Promise<object>} callModel
 *           returns the assistant message ({role, content, tool_calls?})
 * @property {(name: string, args: object, call: object) => Promise<string>} executeTool
 *           returns the text the model reads
 * @property {(conversation: object) => Promise<void>|void} [save]
 * @property {(event: object) => void} [onEvent]   'message', 'busy', 'idle', 'error'
 * @property {() => number} [now]                   epoch seconds
 */

export class AgentRuntime {
  /** @param {AgentDeps} deps */
  constructor(deps) {
    this.deps = deps;
    this.conversation = null;
    /** The runner mode the model was last told about (seed 003). */
    this.lastNotifiedRunnerMode = null;
    this.queue = [];
    this.busy = false;
    this.idle = Promise.resolve();
    this.startConversation();
  }

  now() {
    return this.deps.now ? this.deps.now() : Date.now() / 1000;
  }

  emit(event) {
    if (this.deps.onEvent) this.deps.onEvent(event);
  }

  getRunnerMode() {
    return normalizeMode(this.deps.getRunnerMode());
  }

  /** A new, empty conversation; the current mode becomes the baseline (no notice for it). */
  startConversation() {
    const t = this.now();
    this.conversation = { id: newConversationId(), title: '', created_at: t, updated_at: t, messages: [] };
    this.lastNotifiedRunnerMode = this.getRunnerMode();
    this.queue = [];
    this.emit({ type: 'reset', conversation: this.conversation });
    return this.conversation;
  }

  /** Continues a saved conversation; the current mode becomes the baseline. */
  loadConversation(conv) {
    this.conversation = {
      id: conv.id,
      title: conv.title || '',
      created_at: conv.created_at ?? this.now(),
      updated_at: conv.updated_at ?? this.now(),
      messages: Array.isArray(conv.messages) ? conv.messages.slice() : [],
    };
    this.lastNotifiedRunnerMode = this.getRunnerMode();
    this.queue = [];
    this.emit({ type: 'reset', conversation: this.conversation });
    return this.conversation;
  }

  /**
   * The content of a user message about to be sent or queued: the person's text, preceded
   * by a runner-mode badge when the mode differs from the one last notified (then that
   * mode becomes the notified one, so the notice is never repeated).
   */
  checkAndInjectRunnerModeChange(text) {
    const currentMode = this.getRunnerMode();
    const clean = neutralizeUserText(text);
    if (currentMode === this.lastNotifiedRunnerMode) return clean;
    const locale = this.deps.getLocale ? this.deps.getLocale() : 'en';
    const badge = buildRunnerModeBadge(this.lastNotifiedRunnerMode, currentMode, locale);
    this.lastNotifiedRunnerMode = currentMode;
    return wrapUserContexts([badge], clean);
  }

  /** The next model request: system prompt + developer prompt, history, tools. */
  buildRequest() {
    const runnerMode = this.getRunnerMode();
    const developer = buildDeveloperPrompt({
      runnerMode,
      locale: this.deps.getLocale ? this.deps.getLocale() : 'en',
      workspace: this.deps.getWorkspace ? this.deps.getWorkspace() : null,
      proxyMaxBytes: this.deps.getProxyMaxBytes ? this.deps.getProxyMaxBytes() : undefined,
    });
    // One system message (core + developer): llama.cpp and some chat templates accept a
    // single system message only.
    const system = { role: 'system', content: `${CORE_SYSTEM_PROMPT}\n${developer}` };
    const history = this.conversation.messages.map((m) =>
      m.role === 'tool' ? { role: 'tool', tool_call_id: m.tool_call_id, content: m.content } : m,
    );
    return {
      messages: [system, ...history],
      tools: buildToolSpecs({ runnerMode, catalogue: this.deps.getCatalogue ? this.deps.getCatalogue() : [] }),
    };
  }

  push(message) {
    this.conversation.messages.push(message);
    this.conversation.updated_at = this.now();
    this.emit({ type: 'message', message });
  }

  /**
   * Sends (or queues, while a turn runs) a user message. The mode check happens now,
   * when the message is sent or queued. Resolves when the queue is empty.
   */
  send(text) {
    const content = this.checkAndInjectRunnerModeChange(text);
    this.queue.push(content);
    if (!this.busy) this.idle = this.drain();
    return this.idle;
  }

  async drain() {
    this.busy = true;
    this.emit({ type: 'busy' });
    try {
      while (this.queue.length) {
        const content = this.queue.shift();
        if (!this.conversation.title) this.conversation.title = titleFrom(content);
        this.push({ role: 'user', content });
        await this.runTurn();
        await this.save();
      }
    } finally {
      this.busy = false;
      this.emit({ type: 'idle' });
    }
  }

  async save() {
    if (!this.deps.save) return;
    try {
      await this.deps.save(this.conversation);
    } catch (e) {
      this.emit({ type: 'error', error: `saving the conversation failed: ${e.message || e}` });
    }
  }

  /** Model ↔ tools until the model answers without tool calls (at most MAX_STEPS requests). */
  async runTurn() {
    for (let step = 0; step < MAX_STEPS; step++) {
      let reply;
      try {
        reply = await this.deps.callModel(this.buildRequest());
      } catch (e) {
        this.emit({ type: 'error', error: `the model request failed: ${e.message || e}` });
        return;
      }
      const msg = { role: 'assistant', content: reply.content ?? '' };
      if (reply.tool_calls && reply.tool_calls.length) msg.tool_calls = reply.tool_calls;
      this.push(msg);
      if (!msg.tool_calls) return;
      for (const call of msg.tool_calls) {
        const name = call.function?.name || '';
        const args = parseToolArgs(call.function?.arguments);
        let text;
        if (args.__error) {
          text = `error: ${args.__error}`;
        } else {
          try {
            text = await this.deps.executeTool(name, args, call);
          } catch (e) {
            text = `error: ${e.message || e}`;
          }
        }
        this.push({ role: 'tool', tool_call_id: call.id, name, content: truncate(text) });
      }
    }
    this.emit({ type: 'error', error: `stopped after ${MAX_STEPS} model requests in one turn` });
  }
}
