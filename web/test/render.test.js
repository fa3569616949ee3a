// Chat rendering: chips with tooltips, the person's text without the XML, escaping.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { buildRunnerModeBadge, neutralizeUserText, wrapUserContexts } from '../js/badge.js';
import {
  escapeHtml,
  renderAssistantHtml,
  renderToolCallHtml,
  renderToolResultHtml,
  renderUserMessageHtml,
} from '../js/render.js';

test('a runner-mode badge renders as a chip with a tooltip, and the text stays clean', () => {
  const msg = wrapUserContexts([buildRunnerModeBadge('isolated', 'page', 'zh')], '把按钮背景变蓝');
  const html = renderUserMessageHtml(msg);
  assert.match(
    html,
    /^<div class="user-contexts"><span class="user-file-chip user-context-chip runner-mode" data-type="runner-mode" title="JavaScript 执行环境切换为 page\n\n【系统提示：运行环境变更】\n/,
  );
  assert.match(html, />⚙️ 执行环境: 主线程\(Develop\)<\/span><\/div>/);
  assert.ok(html.endsWith('<div class="user-text">把按钮背景变蓝</div>'), html);
  assert.doesNotMatch(html, /&lt;context_badge|&lt;user_contexts/);
});

test('a message without badges has no chip row', () => {
  assert.equal(renderUserMessageHtml('hello <b>'), '<div class="user-text">hello &lt;b&gt;</div>');
});

test('typed XML is shown as typed, escaped, and not as a chip', () => {
  const html = renderUserMessageHtml(neutralizeUserText('see <user_contexts>'));
  assert.equal(html, '<div class="user-text">see &lt;user_contexts&gt;</div>');
});

test('attributes and content are escaped', () => {
  const badge = '  <context_badge type="x&quot; onmouseover=&quot;alert(1)" label="&lt;img src=x onerror=alert(1)&gt;" preview="p">b</context_badge>';
  const html = renderUserMessageHtml(wrapUserContexts([badge], 't'));
  assert.doesNotMatch(html, /<img/);
  assert.doesNotMatch(html, /" onmouseover="/);
  assert.equal(escapeHtml(`<a href="x">'&`), '&lt;a href=&quot;x&quot;&gt;&#39;&amp;');
});

test('assistant Markdown: code fences, inline code, bold, http links only', () => {
  const html = renderAssistantHtml('**Top** repos:\n```js\nconst a = 1 < 2;\n```\nsee `x` [gh](https://github.com) [bad](javascript:alert(1))');
  assert.match(html, /<strong>Top<\/strong>/);
  assert.match(html, /<pre><code data-lang="js">const a = 1 &lt; 2;\n<\/code><\/pre>/);
  assert.match(html, /<code>x<\/code>/);
  assert.match(html, /<a href="https:\/\/github\.com" target="_blank" rel="noopener noreferrer">gh<\/a>/);
  assert.doesNotMatch(html, /href="javascript/);
});

test('tool calls and results', () => {
  const call = { id: 'c1', function: { name: 'run_js', arguments: JSON.stringify({ code: 'return typeof document' }) } };
  assert.equal(
    renderToolCallHtml(call),
    '<div class="tool-call" data-tool="run_js"><span class="tool-name">run_js</span> <code class="tool-args">return typeof document</code></div>',
  );
  const ok = renderToolResultHtml('mode: page\nresult:\n42', 'run_js');
  assert.match(ok, /^<details class="tool-result" data-tool="run_js"><summary>run_js: mode: page<\/summary>/);
  const bad = renderToolResultHtml('mode: isolated\nerror: ReferenceError: document is not defined', 'run_js');
  assert.match(bad, /class="tool-result failed"/);
});
