// Streaming chat completions: splitting server-sent events and folding OpenAI deltas
// (text and tool-call fragments) into one assistant message.
//
// Pure functions, no DOM.

/**
 * Splits buffered SSE text into complete events' data payloads.
 * @returns {{data: string[], rest: string}} `rest` is an incomplete trailing event.
 */
export function splitSse(buffer) {
  const text = buffer.replace(/\r\n/g, '\n');
  const events = text.split('\n\n');
  const rest = events.pop();
  const data = [];
  for (const ev of events) {
    const lines = ev
      .split('\n')
      .filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(5).replace(/^ /, ''));
    if (lines.length) data.push(lines.join('\n'));
  }
  return { data, rest };
}

/** A fresh accumulator. */
export function newAccumulator() {
  return { content: '', toolCalls: [], finishReason: null };
}

/** Folds one parsed chunk (`{choices: [{delta, finish_reason}]}`) into `acc`. */
export function accumulate(acc, chunk) {
  const choice = chunk && chunk.choices && chunk.choices[0];
  if (!choice) return acc;
  const d = choice.delta || choice.message || {};
  if (typeof d.content === 'string') acc.content += d.content;
  for (const tc of d.tool_calls || []) {
    const i = typeof tc.index === 'number' ? tc.index : acc.toolCalls.length;
    const cur = (acc.toolCalls[i] ||= { id: '', type: 'function', function: { name: '', arguments: '' } });
    if (tc.id) cur.id = tc.id;
    if (tc.function?.name) cur.function.name += tc.function.name;
    if (tc.function?.arguments) cur.function.arguments += tc.function.arguments;
  }
  if (choice.finish_reason) acc.finishReason = choice.finish_reason;
  return acc;
}

/** The assistant message an accumulator holds (tool calls get ids when the server sent none). */
export function finalize(acc) {
  const msg = { role: 'assistant', content: acc.content };
  const calls = acc.toolCalls.filter(Boolean);
  if (calls.length) {
    msg.tool_calls = calls.map((c, i) => ({ ...c, id: c.id || `call_${i}_${Date.now().toString(36)}` }));
  }
  return msg;
}

/** The assistant message of a non-streamed answer (`{choices: [{message}]}`). */
export function messageFromCompletion(body) {
  const m = body && body.choices && body.choices[0] && body.choices[0].message;
  if (!m) throw new Error('the model answered without choices[0].message');
  const msg = { role: 'assistant', content: m.content ?? '' };
  if (Array.isArray(m.tool_calls) && m.tool_calls.length) msg.tool_calls = m.tool_calls;
  return msg;
}
