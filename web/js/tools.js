// The tools the in-page agent offers the model (OpenAI function-calling format): run_js
// (described for the current runner mode), open_in_workspace, and the gateway's browser_*
// tools taken from its catalogue (GET /v1/console/tools), so their schemas are defined
// once, in crates/tools.
//
// Pure functions, no DOM.

import { describeRunJs } from './prompts.js';

/** Catalogue tools the console offers (in this order) when the gateway has them. */
export const BROWSER_TOOLS = Object.freeze([
  'browser_snapshot',
  'browser_click',
  'browser_type',
  'browser_select_option',
  'browser_press',
  'browser_scroll',
  'browser_back',
  'browser_tabs',
  'browser_tab_activate',
  'browser_dialog',
]);

/** Tools whose call changes what the workspace tab shows (a fresh screenshot follows). */
export const WORKSPACE_ACTIONS = Object.freeze(
  new Set([
    'open_in_workspace',
    'browser_click',
    'browser_type',
    'browser_select_option',
    'browser_press',
    'browser_scroll',
    'browser_back',
    'browser_tabs',
    'browser_tab_activate',
    'browser_dialog',
  ]),
);

/** The longest tool result handed back to the model, in characters. */
export const MAX_RESULT_CHARS = 20000;

/** Cuts `text` to `max` characters, saying how much was left out. */
export function truncate(text, max = MAX_RESULT_CHARS) {
  const s = String(text ?? '');
  if (s.length <= max) return s;
  return `${s.slice(0, max)}\n… [${s.length - max} more characters cut]`;
}

/** The run_js tool for `runnerMode`. */
export function runJsTool(runnerMode) {
  return {
    type: 'function',
    function: {
      name: 'run_js',
      description: describeRunJs(runnerMode),
      parameters: {
        type: 'object',
        properties: {
          code: { type: 'string', description: 'JavaScript: the body of an async function; `return` the result.' },
          timeout_ms: {
            type: 'integer',
            minimum: 100,
            maximum: 120000,
            description: 'How long to wait for it (default 15000).',
          },
        },
        required: ['code'],
        additionalProperties: false,
      },
    },
  };
}

/** The open_in_workspace tool. */
export const OPEN_IN_WORKSPACE = Object.freeze({
  type: 'function',
  function: {
    name: 'open_in_workspace',
    description:
      "Open a URL in the workspace: the session's supervised browser tab, shown live to the user next to the chat. Use it when a page needs a real browser (scripts, login, clicking, scrolling) or the user should see it; then use browser_snapshot and the other browser_* tools on it.",
    parameters: {
      type: 'object',
      properties: { url: { type: 'string', description: 'An absolute http(s) URL.' } },
      required: ['url'],
      additionalProperties: false,
    },
  },
});

/**
 * Every tool for one model request: run_js for the current mode, open_in_workspace, and
 * the listed browser_* tools present in `catalogue` ([{name, description, input_schema}]).
 */
export function buildToolSpecs({ runnerMode, catalogue = [] }) {
  const byName = new Map(catalogue.map((t) => [t.name, t]));
  const tools = [runJsTool(runnerMode), OPEN_IN_WORKSPACE];
  for (const name of BROWSER_TOOLS) {
    const t = byName.get(name);
    if (!t) continue;
    tools.push({
      type: 'function',
      function: {
        name: t.name,
        description: `${t.description} (Acts on the workspace tab.)`,
        parameters: t.input_schema || { type: 'object', properties: {} },
      },
    });
  }
  return tools;
}

/** Parses a tool call's JSON arguments; `{__error}` when they are not a JSON object. */
export function parseToolArgs(raw) {
  if (raw && typeof raw === 'object') return raw;
  try {
    const v = JSON.parse(raw || '{}');
    return v && typeof v === 'object' && !Array.isArray(v) ? v : { __error: 'arguments must be a JSON object' };
  } catch (e) {
    return { __error: `arguments are not valid JSON: ${e.message}` };
  }
}

/** The text the model reads for a run_js outcome ({ok, value, error, logs, mode}). */
export function formatRunJsResult(r) {
  const lines = [`mode: ${r.mode}`];
  if (r.logs && r.logs.length) lines.push(`console:\n${r.logs.join('\n')}`);
  if (r.ok) lines.push(`result:\n${r.value}`);
  else lines.push(`error: ${r.error}`);
  return truncate(lines.join('\n'));
}

/** The text the model reads for a gateway tool answer ({ok, text, error}). */
export function formatGatewayResult(body) {
  if (body && body.ok) return truncate(body.text || JSON.stringify(body.result ?? {}));
  const e = (body && body.error) || {};
  return truncate(body && body.text ? body.text : `Error [${e.code || 'error'}]: ${e.message || 'the call failed'}`);
}
