// The agent loop with a scripted model: request building per mode, the runner-mode
// notice sequence of seed 003 section 4, conversation resets, queueing, tool calls.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { AgentRuntime, MAX_STEPS, titleFrom } from '../js/agent.js';
import { parseUserContexts } from '../js/badge.js';
import { CORE_SYSTEM_PROMPT, describeRunJs } from '../js/prompts.js';

/** A runtime whose model answers from `script` (a function of the request) and records requests. */
function harness({ mode = 'isolated', locale = 'en', script, tools } = {}) {
  const state = { mode, locale, requests: [], saved: [], executed: [], events: [] };
  const agent = new AgentRuntime({
    getRunnerMode: () => state.mode,
    getLocale: () => state.locale,
    getCatalogue: () => [{ name: 'browser_snapshot', description: 'Snapshot', input_schema: { type: 'object' } }],
    getWorkspace: () => ({ url: 'http://127.0.0.1:1/hello.html', title: 'Hello' }),
    callModel: async (req) => {
      state.requests.push(structuredClone(req));
      return script ? script(req, state) : { role: 'assistant', content: 'ok' };
    },
    executeTool: async (name, args, call) => {
      state.executed.push({ name, args, id: call.id });
      return tools ? tools(name, args) : `ran ${name}`;
    },
    save: (c) => {
      state.saved.push(structuredClone(c));
    },
    onEvent: (e) => state.events.push(e.type),
  });
  return { agent, state };
}

const lastUser = (req) => [...req.messages].reverse().find((m) => m.role === 'user').content;
const hasBadge = (content) => parseUserContexts(content).badges.some((b) => b.type === 'runner-mode');

test('badge sequence (seed 003 section 4): none at first, once per switch, none while unchanged, again on the way back', async () => {
  const { agent, state } = harness({ locale: 'zh' });
  await agent.send('第一条');
  assert.equal(hasBadge(lastUser(state.requests[0])), false, 'initial send: hasBadge = false');

  state.mode = 'page';
  await agent.send('把页面按钮背景变蓝');
  const second = lastUser(state.requests[1]);
  assert.equal(hasBadge(second), true);
  const { badges, text } = parseUserContexts(second);
  assert.equal(badges[0].label, '⚙️ 执行环境: 主线程(Develop)');
  assert.equal(text, '把页面按钮背景变蓝', 'the original text is not polluted');

  await agent.send('继续');
  assert.equal(hasBadge(lastUser(state.requests[2])), false, 'unchanged: no repeat');

  state.mode = 'isolated';
  await agent.send('切回来了');
  const fourth = parseUserContexts(lastUser(state.requests[3]));
  assert.equal(fourth.badges.length, 1);
  assert.equal(fourth.badges[0].label, '⚙️ 执行环境: Worker沙箱');
  assert.match(fourth.badges[0].body, /由「页面主线程模式 \(Develop 模式 \/ page\)」切换为「Web Worker 隔离沙箱模式 \(isolated\)」/);

  // a switch and a switch back before sending: nothing to tell
  state.mode = 'page';
  state.mode = 'isolated';
  await agent.send('again');
  assert.equal(hasBadge(lastUser(state.requests[4])), false);
});

test('the developer prompt and run_js description follow the mode of each request', async () => {
  const { agent, state } = harness();
  await agent.send('a');
  state.mode = 'page';
  await agent.send('b');
  const [r1, r2] = state.requests;
  assert.equal(r1.messages[0].role, 'system');
  assert.ok(r1.messages[0].content.startsWith(CORE_SYSTEM_PROMPT));
  assert.match(r1.messages[0].content, /Selected mode: Web Worker isolated sandbox \(isolated\)/);
  assert.match(r2.messages[0].content, /Selected mode: Page main-thread mode \(Develop \/ page\)/);
  assert.match(r2.messages[0].content, /http:\/\/127\.0\.0\.1:1\/hello\.html "Hello"/);
  assert.equal(r1.tools[0].function.description, describeRunJs('isolated'));
  assert.equal(r2.tools[0].function.description, describeRunJs('page'));
  assert.deepEqual(
    r2.tools.map((t) => t.function.name),
    ['run_js', 'open_in_workspace', 'browser_snapshot'],
  );
  // exactly one system message, then the history
  assert.equal(r2.messages.filter((m) => m.role === 'system').length, 1);
});

test('a new conversation resets the baseline: no notice for a mode chosen before it', async () => {
  const { agent, state } = harness();
  await agent.send('a');
  state.mode = 'page';
  agent.startConversation();
  await agent.send('b');
  assert.equal(hasBadge(lastUser(state.requests[1])), false);
  assert.equal(state.requests[1].messages.length, 2, 'system + the new user message only');
});

test('loading a conversation resets the baseline too, and keeps its history', async () => {
  const { agent, state } = harness();
  await agent.send('first');
  const saved = state.saved.at(-1);
  state.mode = 'page';
  agent.startConversation();
  state.mode = 'isolated';
  agent.loadConversation(saved);
  await agent.send('second');
  const req = state.requests.at(-1);
  assert.equal(hasBadge(lastUser(req)), false);
  assert.deepEqual(
    req.messages.map((m) => m.role),
    ['system', 'user', 'assistant', 'user'],
  );
  assert.equal(agent.conversation.id, saved.id);
});

test('a message queued during a turn is checked when it is queued', async () => {
  let release;
  const gate = new Promise((r) => (release = r));
  let calls = 0;
  const { agent, state } = harness({
    script: async () => {
      calls += 1;
      if (calls === 1) await gate;
      return { role: 'assistant', content: `answer ${calls}` };
    },
  });
  const done = agent.send('first');
  assert.equal(agent.busy, true);
  state.mode = 'page';
  agent.send('queued after the switch');
  state.mode = 'isolated'; // switched back after queueing: that is the next message's business
  release();
  await done;
  await agent.idle;
  const contents = agent.conversation.messages.filter((m) => m.role === 'user').map((m) => m.content);
  assert.equal(contents.length, 2);
  assert.equal(hasBadge(contents[0]), false);
  assert.equal(parseUserContexts(contents[1]).badges[0].label, '⚙️ Runner: Main thread (Develop)');
  await agent.send('third');
  const third = parseUserContexts(agent.conversation.messages.filter((m) => m.role === 'user').at(-1).content);
  assert.equal(third.badges[0].label, '⚙️ Runner: Worker sandbox', 'back to isolated is announced');
  assert.deepEqual(state.events.filter((e) => e === 'busy' || e === 'idle').slice(0, 2), ['busy', 'idle']);
});

test('tool calls run, their results go back to the model, then the answer is saved', async () => {
  const { agent, state } = harness({
    script: (req) => {
      const last = req.messages.at(-1);
      if (last.role === 'user') {
        return {
          role: 'assistant',
          content: '',
          tool_calls: [
            { id: 'c1', type: 'function', function: { name: 'run_js', arguments: '{"code":"return typeof document"}' } },
            { id: 'c2', type: 'function', function: { name: 'open_in_workspace', arguments: '{"url":"https://example.com/"}' } },
            { id: 'c3', type: 'function', function: { name: 'run_js', arguments: '{broken' } },
          ],
        };
      }
      return { role: 'assistant', content: `saw ${req.messages.filter((m) => m.role === 'tool').length} results` };
    },
    tools: (name, args) => (name === 'run_js' ? `mode: isolated\nresult:\n${args.code.length}` : 'opened'),
  });
  await agent.send('go');
  assert.deepEqual(
    state.executed.map((e) => [e.name, e.id]),
    [
      ['run_js', 'c1'],
      ['open_in_workspace', 'c2'],
    ],
    'the call with broken arguments is not run',
  );
  const second = state.requests[1];
  const tools = second.messages.filter((m) => m.role === 'tool');
  assert.deepEqual(
    tools.slice(0, 2).map((m) => [m.tool_call_id, m.content]),
    [
      ['c1', 'mode: isolated\nresult:\n22'],
      ['c2', 'opened'],
    ],
  );
  assert.equal(tools[2].tool_call_id, 'c3');
  assert.match(tools[2].content, /^error: arguments are not valid JSON/);
  assert.ok(tools.every((m) => Object.keys(m).sort().join() === 'content,role,tool_call_id'), 'no extra fields sent');
  assert.equal(agent.conversation.messages.at(-1).content, 'saw 3 results');
  const saved = state.saved.at(-1);
  assert.equal(saved.title, 'go');
  assert.equal(saved.messages.length, 6);
  assert.equal(saved.messages[2].name, 'run_js', 'stored tool results keep the tool name for the chat');
});

test('a model that never stops calling tools is cut off', async () => {
  const { agent, state } = harness({
    script: () => ({ role: 'assistant', content: '', tool_calls: [{ id: 'x', type: 'function', function: { name: 'run_js', arguments: '{"code":"1"}' } }] }),
  });
  await agent.send('loop');
  assert.equal(state.requests.length, MAX_STEPS);
  assert.ok(state.events.includes('error'));
});

test('a failing model request ends the turn with an error event', async () => {
  const { agent, state } = harness({
    script: () => {
      throw new Error('502 llm_unreachable');
    },
  });
  await agent.send('hi');
  assert.ok(state.events.includes('error'));
  assert.equal(agent.busy, false);
  assert.equal(agent.conversation.messages.length, 1);
});

test('titles', () => {
  assert.equal(titleFrom('<user_contexts>\n  <context_badge type="runner-mode" label="x" preview="y">z</context_badge>\n</user_contexts>\n\nHello  world'), 'Hello world');
  assert.equal(titleFrom('x'.repeat(80)).length, 60);
});
