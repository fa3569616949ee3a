// Streaming: SSE splitting and folding of OpenAI deltas, text and tool calls.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { accumulate, finalize, messageFromCompletion, newAccumulator, splitSse } from '../js/sse.js';

test('complete events are split off; a partial one is kept', () => {
  const { data, rest } = splitSse('data: {"a":1}\n\ndata: [DONE]\n\n: keep-alive\n\ndata: {"b"');
  assert.deepEqual(data, ['{"a":1}', '[DONE]']);
  assert.equal(rest, 'data: {"b"');
  assert.deepEqual(splitSse('data: x\r\n\r\n').data, ['x']);
});

test('text and tool-call fragments fold into one message', () => {
  const acc = newAccumulator();
  const chunks = [
    { choices: [{ delta: { role: 'assistant', content: 'Look' } }] },
    { choices: [{ delta: { content: 'ing' } }] },
    { choices: [{ delta: { tool_calls: [{ index: 0, id: 'call_1', function: { name: 'run_js', arguments: '{"co' } }] } }] },
    { choices: [{ delta: { tool_calls: [{ index: 0, function: { arguments: 'de":"1"}' } }] } }] },
    { choices: [{ delta: { tool_calls: [{ index: 1, id: 'call_2', function: { name: 'open_in_workspace', arguments: '{}' } }] } }] },
    { choices: [{ delta: {}, finish_reason: 'tool_calls' }] },
  ];
  for (const c of chunks) accumulate(acc, c);
  const m = finalize(acc);
  assert.equal(m.content, 'Looking');
  assert.equal(acc.finishReason, 'tool_calls');
  assert.deepEqual(m.tool_calls, [
    { id: 'call_1', type: 'function', function: { name: 'run_js', arguments: '{"code":"1"}' } },
    { id: 'call_2', type: 'function', function: { name: 'open_in_workspace', arguments: '{}' } },
  ]);
});

test('a message without tool calls has none; missing ids are made up', () => {
  const acc = accumulate(newAccumulator(), { choices: [{ delta: { content: 'hi' } }] });
  assert.deepEqual(finalize(acc), { role: 'assistant', content: 'hi' });
  const b = accumulate(newAccumulator(), { choices: [{ delta: { tool_calls: [{ index: 0, function: { name: 'x', arguments: '{}' } }] } }] });
  assert.match(finalize(b).tool_calls[0].id, /^call_0_/);
});

test('non-streamed answers', () => {
  const m = messageFromCompletion({ choices: [{ message: { role: 'assistant', content: null, tool_calls: [{ id: 'a', type: 'function', function: { name: 'run_js', arguments: '{}' } }] } }] });
  assert.equal(m.content, '');
  assert.equal(m.tool_calls.length, 1);
  assert.throws(() => messageFromCompletion({}), /choices/);
});
