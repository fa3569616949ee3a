// HTML for the chat: user messages with their context badges as chips, assistant text
// with a little Markdown, tool calls and results. Returns strings; everything that came
// from a person, the model or a page is escaped.
//
// Pure functions, no DOM.

import { parseUserContexts } from './badge.js';

const HTML_ESCAPES = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Escapes text for HTML content and attribute values. */
export function escapeHtml(s) {
  return String(s ?? '').replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]);
}

function chipClass(type) {
  const safe = String(type).replace(/[^a-z0-9-]/gi, '');
  return `user-file-chip user-context-chip ${safe}`;
}

/** One badge as a chip: the label, and the preview and notice as its tooltip. */
export function renderChipHtml(badge) {
  const tip = badge.preview ? `${badge.preview}\n\n${badge.body}` : badge.body;
  return (
    `<span class="${chipClass(badge.type)}" data-type="${escapeHtml(badge.type)}" title="${escapeHtml(tip)}">` +
    `${escapeHtml(badge.label)}</span>`
  );
}

/**
 * A user message (seed 003, renderUserMessageHtml): every <user_contexts> block becomes
 * chips, and the person's text is shown without the XML.
 */
export function renderUserMessageHtml(content) {
  const { text, badges } = parseUserContexts(content);
  // neutralizeUserText turned a typed <user_contexts> into &lt;user_contexts: show it as typed
  const shown = text.replace(/&lt;(\/?)(user_contexts|context_badge)/gi, '<$1$2');
  const chips = badges.length ? `<div class="user-contexts">${badges.map(renderChipHtml).join('')}</div>` : '';
  return `${chips}<div class="user-text">${escapeHtml(shown)}</div>`;
}

function inline(s) {
  // `code`, **bold**, [text](http…) on already-escaped text
  return s
    .replace(/`([^`\n]+)`/g, '<code>$1</code>')
    .replace(/\*\*([^*\n]+)\*\*/g, '<strong>$1</strong>')
    .replace(/\[([^\]\n]+)\]\((https?:\/\/[^)\s"]+)\)/g, '<a href="$2" target="_blank" rel="noopener noreferrer">$1</a>');
}

/** Assistant text with fenced code blocks, inline code, bold and links. */
export function renderAssistantHtml(text) {
  const parts = String(text ?? '').split(/```([\w-]*)\n?([\s\S]*?)```/g);
  let html = '';
  for (let i = 0; i < parts.length; i += 3) {
    html += inline(escapeHtml(parts[i]));
    if (i + 2 < parts.length) {
      html += `<pre><code data-lang="${escapeHtml(parts[i + 1])}">${escapeHtml(parts[i + 2])}</code></pre>`;
    }
  }
  return `<div class="assistant-text">${html}</div>`;
}

/** A short one-line summary of tool arguments. */
export function summarizeArgs(args, max = 160) {
  let s;
  if (args && typeof args === 'object' && typeof args.code === 'string') s = args.code;
  else if (args && typeof args === 'object' && typeof args.url === 'string') s = args.url;
  else s = JSON.stringify(args ?? {});
  s = s.replace(/\s+/g, ' ').trim();
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

/** A tool call the model made. */
export function renderToolCallHtml(call) {
  let args = {};
  try {
    args = JSON.parse(call?.function?.arguments || '{}');
  } catch {
    args = call?.function?.arguments;
  }
  const name = call?.function?.name || '?';
  return (
    `<div class="tool-call" data-tool="${escapeHtml(name)}"><span class="tool-name">${escapeHtml(name)}</span> ` +
    `<code class="tool-args">${escapeHtml(summarizeArgs(args))}</code></div>`
  );
}

/** A tool result, collapsed. */
export function renderToolResultHtml(content, name) {
  const text = String(content ?? '');
  const first = text.split('\n', 1)[0];
  const failed = /^(error:|Error \[)/m.test(text) ? ' failed' : '';
  return (
    `<details class="tool-result${failed}" data-tool="${escapeHtml(name || '')}"><summary>${escapeHtml(name || 'result')}: ` +
    `${escapeHtml(first.slice(0, 140))}</summary><pre>${escapeHtml(text)}</pre></details>`
  );
}
