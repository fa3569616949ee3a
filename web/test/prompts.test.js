// Prompt text per runner mode (seed 003): CORE_SYSTEM_PROMPT, buildDeveloperPrompt,
// describeRunJs.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  CORE_SYSTEM_PROMPT,
  buildDeveloperPrompt,
  describeRunJs,
  modeLabel,
  normalizeMode,
} from '../js/prompts.js';

test('the core system prompt carries the three-tier strategy in order', () => {
  const p = CORE_SYSTEM_PROMPT;
  const t1 = p.indexOf('1. Public REST APIs that allow CORS');
  const t2 = p.indexOf("2. Any other page or API (no CORS headers");
  const t3 = p.indexOf('3. When a page needs a real browser');
  assert.ok(t1 > 0 && t2 > t1 && t3 > t2, 'tiers 1 < 2 < 3');
  assert.match(p, /api\.github\.com/);
  assert.match(p, /fetch\('\/v1\/proxy\?url=' \+ encodeURIComponent\(url\)\)/);
  assert.match(p, /open_in_workspace/);
  assert.match(p, /TypeError: Failed to fetch/);
});

test('the developer prompt names the current mode with its powers and limits (seed wording in zh)', () => {
  const zhPage = buildDeveloperPrompt({ runnerMode: 'page', locale: 'zh' });
  assert.ok(
    zhPage.startsWith(
      '\n【当前 JavaScript (run_js) 执行配置与网络准则】:\n' +
        '- 用户选定档位: 页面主线程模式 (Develop 模式 / page)\n' +
        '  * 权限特性: 直接在宿主页面主线程执行，可自由访问 document、window、localStorage 及 window.__inpage__。注意死循环会阻塞 UI。\n',
    ),
    zhPage,
  );
  const zhIso = buildDeveloperPrompt({ runnerMode: 'isolated', locale: 'zh' });
  assert.ok(
    zhIso.includes(
      '- 用户选定档位: Web Worker 隔离沙箱模式 (isolated)\n' +
        '  * 权限特性: 在独立的 Web Worker 隔离线程中执行，安全无阻塞（超时强杀）；不可访问 DOM (document) 或 localStorage。\n',
    ),
    zhIso,
  );
  const en = buildDeveloperPrompt({ runnerMode: 'page' });
  assert.match(en, /Selected mode: Page main-thread mode \(Develop \/ page\)/);
  assert.match(en, /document, window, localStorage and window\.__inpage__/);
  assert.doesNotMatch(en, /no access to the DOM/);
  const enIso = buildDeveloperPrompt({ runnerMode: 'isolated' });
  assert.match(enIso, /Web Worker isolated sandbox \(isolated\)/);
  assert.match(enIso, /no access to the DOM \(document\) or localStorage/);
  // both carry the network tiers
  for (const p of [en, enIso]) {
    assert.match(p, /1\. Public CORS-open JSON APIs/);
    assert.match(p, /2\. Any other page or API without CORS headers/);
    assert.match(p, /3\. Pages that need a real browser/);
  }
});

test('the developer prompt reports the workspace tab and the proxy limit', () => {
  const none = buildDeveloperPrompt({ runnerMode: 'isolated' });
  assert.match(none, /Workspace tab: nothing opened yet/);
  const ws = buildDeveloperPrompt({
    runnerMode: 'isolated',
    workspace: { url: 'https://example.com/', title: 'Example' },
    proxyMaxBytes: 5 * 1024 * 1024,
  });
  assert.match(ws, /https:\/\/example\.com\/ "Example"/);
  assert.match(ws, /at most 5 MiB/);
});

test('describeRunJs is rebuilt for the mode', () => {
  const iso = describeRunJs('isolated');
  const page = describeRunJs('page');
  assert.notEqual(iso, page);
  assert.match(iso, /Current runner mode: isolated/);
  assert.match(iso, /no document, window, DOM or localStorage/);
  assert.match(page, /Current runner mode: page/);
  assert.match(page, /window\.__inpage__/);
  for (const d of [iso, page]) assert.match(d, /\/v1\/proxy\?url=/);
  // anything unknown is treated as isolated, the safe mode
  assert.equal(describeRunJs('nonsense'), iso);
  assert.equal(normalizeMode(undefined), 'isolated');
  assert.equal(modeLabel('page', 'zh'), '页面主线程模式 (Develop 模式 / page)');
});
