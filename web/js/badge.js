// Context badges (seed 003): when the runner mode changed since the model was last told,
// the next user message carries
//   <user_contexts>
//     <context_badge type="runner-mode" label="…" preview="…">…</context_badge>
//   </user_contexts>
// before the person's text. The chat shows each badge as a chip and the text without
// the XML (render.js).
//
// Pure functions, no DOM.

import { modeLabel, modeText, normalizeMode } from './prompts.js';

const XML_ESCAPES = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' };

/** Escapes text for an XML attribute value. */
export function escapeXmlAttr(s) {
  return String(s).replace(/[&<>"]/g, (c) => XML_ESCAPES[c]);
}

/** Undoes escapeXmlAttr (and &#39;/&apos;). */
export function unescapeXml(s) {
  return String(s)
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;|&apos;/g, "'")
    .replace(/&amp;/g, '&');
}

/**
 * The runner-mode badge for a switch from `prevMode` to `currentMode`, in the seed's
 * format (two-space indented, attributes type, label, preview; the notice as its body).
 */
export function buildRunnerModeBadge(prevMode, currentMode, locale = 'en') {
  const t = modeText(locale);
  const curr = normalizeMode(currentMode);
  const prevModeLabel = modeLabel(prevMode, locale);
  const label = `${t.labelPrefix}${t.badgeMode[curr]}`;
  const preview = t.preview(curr);
  const detail = `${t.powers[curr].replace(/^\s+|\s+$/g, '')}\n${t.advice[curr]}`;
  return (
    `  <context_badge type="runner-mode" label="${escapeXmlAttr(label)}" preview="${escapeXmlAttr(preview)}">\n` +
    `${t.heading}\n` +
    `${t.switched(prevModeLabel, modeLabel(curr, locale))}\n` +
    `${detail}\n` +
    '  </context_badge>'
  );
}

/** Puts badges (strings from buildRunnerModeBadge) in a <user_contexts> block before `text`. */
export function wrapUserContexts(badges, text) {
  if (!badges || badges.length === 0) return text;
  return `<user_contexts>\n${badges.join('\n')}\n</user_contexts>\n\n${text}`;
}

/**
 * Makes a person's own text unable to pose as a badge: a literal <user_contexts> tag they
 * type is turned into entities, so only badges the console adds are rendered as chips.
 */
export function neutralizeUserText(text) {
  return String(text).replace(/<(\/?)(user_contexts|context_badge)/gi, '&lt;$1$2');
}

const BLOCK_RE = /<user_contexts>([\s\S]*?)<\/user_contexts>/g;
const BADGE_RE = /<context_badge\b([^>]*)>([\s\S]*?)<\/context_badge>/g;
const ATTR_RE = /([A-Za-z_][\w-]*)="([^"]*)"/g;

/**
 * Splits a user message into its badges and the person's text.
 * @returns {{text: string, badges: Array<{type: string, label: string, preview: string, body: string}>}}
 */
export function parseUserContexts(content) {
  const s = typeof content === 'string' ? content : '';
  const badges = [];
  for (const block of s.matchAll(BLOCK_RE)) {
    for (const b of block[1].matchAll(BADGE_RE)) {
      const attrs = {};
      for (const a of b[1].matchAll(ATTR_RE)) attrs[a[1]] = unescapeXml(a[2]);
      badges.push({
        type: attrs.type || 'context',
        label: attrs.label || attrs.type || 'context',
        preview: attrs.preview || '',
        body: b[2].replace(/^\s+|\s+$/g, ''),
      });
    }
  }
  return { text: stripUserContexts(s), badges };
}

/** The message without any <user_contexts> block, trimmed. */
export function stripUserContexts(content) {
  return String(content).replace(BLOCK_RE, '').replace(/^\s+|\s+$/g, '');
}
