// Prompt text for the in-page agent (seed 003): the core system prompt with the
// three-tier data strategy, the developer prompt rebuilt every turn for the current
// runner mode, and the run_js tool description rebuilt for the mode.
//
// Pure functions, no DOM: tested with `node --test web/`.

/** The two runner modes of run_js. */
export const RUNNER_MODES = Object.freeze(['isolated', 'page']);

/** Languages of the mode notices and the developer prompt. */
export const LOCALES = Object.freeze(['en', 'zh']);

/** Normalises a runner mode: anything but "page" is "isolated". */
export function normalizeMode(mode) {
  return mode === 'page' ? 'page' : 'isolated';
}

function normalizeLocale(locale) {
  return LOCALES.includes(locale) ? locale : 'en';
}

// The mode-specific strings. `zh` is the seed's wording, verbatim.
const TEXT = {
  en: {
    modeName: {
      page: 'Page main-thread mode (Develop / page)',
      isolated: 'Web Worker isolated sandbox (isolated)',
    },
    badgeMode: { page: 'Main thread (Develop)', isolated: 'Worker sandbox' },
    labelPrefix: '⚙️ Runner: ',
    preview: (m) => `JavaScript runner switched to ${m}`,
    heading: '[System notice: runner environment changed]',
    switched: (prev, curr) =>
      `The user switched the JavaScript (run_js) runner in settings from "${prev}" to "${curr}".`,
    powers: {
      page:
        '  * Powers: runs directly on the host page main thread, with free access to document, window, localStorage and window.__inpage__. Note: an endless loop blocks the UI.\n',
      isolated:
        '  * Powers: runs in a separate Web Worker thread, safe and non-blocking (killed on timeout); no access to the DOM (document) or localStorage.\n',
    },
    advice: {
      page: 'From now on, write run_js code that reads and changes the page directly (document.querySelector, element.style, …) when the user asks for it.',
      isolated:
        'From now on, run_js code cannot touch the page: use it for computation and fetch; to act on a web page use open_in_workspace and the browser_* tools.',
    },
    devHeading: '[Current JavaScript (run_js) configuration and network rules]:',
    selected: '- Selected mode: ',
    network: (maxMiB) =>
      '- Network rules (three tiers, in this order):\n' +
      '  1. Public CORS-open JSON APIs (e.g. https://api.github.com/search/repositories?q=…, Wikipedia REST): fetch them directly in run_js; fastest, structured data.\n' +
      "  2. Any other page or API without CORS headers: run_js `fetch('/v1/proxy?url=' + encodeURIComponent(url))` — the gateway fetches it server-side (public http/https hosts only, at most " +
      maxMiB +
      ' MiB; the console adds its credentials itself).\n' +
      '  3. Pages that need a real browser (login, clicking, scrolling, rendering, a person watching): open_in_workspace(url), then browser_snapshot / browser_click / browser_type / browser_scroll.\n' +
      '  A cross-origin fetch that fails with "TypeError: Failed to fetch" is the browser\'s CORS block, not a network outage: switch to tier 2 at once instead of retrying.\n',
    workspace: (ws) =>
      ws && ws.url
        ? `- Workspace tab (the session's supervised browser tab, shown to the user): ${ws.url}${ws.title ? ` "${ws.title}"` : ''}\n`
        : '- Workspace tab: nothing opened yet (open_in_workspace opens a page there).\n',
  },
  zh: {
    modeName: {
      page: '页面主线程模式 (Develop 模式 / page)',
      isolated: 'Web Worker 隔离沙箱模式 (isolated)',
    },
    badgeMode: { page: '主线程(Develop)', isolated: 'Worker沙箱' },
    labelPrefix: '⚙️ 执行环境: ',
    preview: (m) => `JavaScript 执行环境切换为 ${m}`,
    heading: '【系统提示：运行环境变更】',
    switched: (prev, curr) => `用户已在设置中将 JavaScript (run_js) 执行环境由「${prev}」切换为「${curr}」。`,
    powers: {
      page: '  * 权限特性: 直接在宿主页面主线程执行，可自由访问 document、window、localStorage 及 window.__inpage__。注意死循环会阻塞 UI。\n',
      isolated: '  * 权限特性: 在独立的 Web Worker 隔离线程中执行，安全无阻塞（超时强杀）；不可访问 DOM (document) 或 localStorage。\n',
    },
    advice: {
      page: '此后当用户要求时，run_js 代码可直接读取并修改页面（document.querySelector、element.style 等）。',
      isolated: '此后 run_js 代码无法触及页面：用于计算与 fetch；如需操作网页，请使用 open_in_workspace 与 browser_* 工具。',
    },
    devHeading: '【当前 JavaScript (run_js) 执行配置与网络准则】:',
    selected: '- 用户选定档位: ',
    network: (maxMiB) =>
      '- 网络请求三层准则（按顺序）:\n' +
      '  1. 开放 CORS 的公共 REST API（如 https://api.github.com/search/repositories?q=…）：在 run_js 中直接 fetch，获取结构化 JSON。\n' +
      "  2. 任意未开放 CORS 的外部页面：run_js `fetch('/v1/proxy?url=' + encodeURIComponent(url))`，由网关在服务端中转（仅公网 http/https，最大 " +
      maxMiB +
      ' MiB；凭据由控制台自动附加）。\n' +
      '  3. 需要真实浏览器（登录、点击、滚动、渲染、用户观看）：open_in_workspace(url)，再用 browser_snapshot / browser_click / browser_type / browser_scroll。\n' +
      '  跨域 fetch 抛出 "TypeError: Failed to fetch" 是浏览器的 CORS 拦截而非网络故障：立即改用第 2 层，不要重试。\n',
    workspace: (ws) =>
      ws && ws.url
        ? `- 工作区标签页（会话受监管的浏览器标签页，用户可见）: ${ws.url}${ws.title ? ` "${ws.title}"` : ''}\n`
        : '- 工作区标签页: 尚未打开页面（open_in_workspace 可在其中打开页面）。\n',
  },
};

/** The localised strings for `locale`. */
export function modeText(locale) {
  return TEXT[normalizeLocale(locale)];
}

/** The full name of a mode ("Web Worker isolated sandbox (isolated)"). */
export function modeLabel(mode, locale = 'en') {
  return modeText(locale).modeName[normalizeMode(mode)];
}

/**
 * The system prompt every request starts with: who the agent is, its tools, and the
 * three-tier strategy for external data.
 */
export const CORE_SYSTEM_PROMPT = `You are the tabgate in-page agent. You run inside the user's browser, in a console page served by the tabgate gateway, and you help the user by writing and running JavaScript and by driving a real browser tab.

Tools:
- run_js{code}: runs JavaScript in the runner mode the user selected in settings (the developer message says which mode is active and what it can reach). The code is the body of an async function: use await, and return the value you want to see.
- open_in_workspace{url}: opens a page in the workspace — the session's supervised browser tab, shown live next to the chat.
- browser_* tools: act in the workspace tab (browser_snapshot gives an accessibility tree with refs; browser_click, browser_type, browser_press, browser_scroll, browser_back, browser_tabs, browser_dialog act on it).

External data — three tiers, try them in this order:
1. Public REST APIs that allow CORS (for example https://api.github.com/search/repositories?q=stars:>1000 — GitHub's API answers any origin, 60 unauthenticated requests an hour): fetch them directly in run_js and work with the JSON. Prefer an API over scraping HTML.
2. Any other page or API (no CORS headers, e.g. https://github.com/trending): fetch('/v1/proxy?url=' + encodeURIComponent(url)) in run_js. The gateway fetches it server-side and returns the body; read it with .text() or .json(). Internal and private addresses are refused by the gateway.
3. When a page needs a real browser — logging in, clicking, scrolling, content rendered by scripts, or the user wants to watch — open_in_workspace(url), then browser_snapshot and the other browser_* tools.

A cross-origin fetch that throws "TypeError: Failed to fetch" was blocked by the browser's same-origin policy (CORS); it is not a network outage and retrying will not help: use tier 2.

Work in as few steps as possible, show your results clearly (Markdown is fine), and answer in the user's language.`;

/**
 * The developer prompt, rebuilt for every model request: the current runner mode with its
 * powers and limits (seed 003, buildDeveloperPrompt), the network rules, and the workspace.
 *
 * @param {{runnerMode: string, locale?: string, workspace?: {url?: string, title?: string},
 *          proxyMaxBytes?: number}} opts
 */
export function buildDeveloperPrompt(opts) {
  const runnerMode = normalizeMode(opts.runnerMode);
  const t = modeText(opts.locale);
  const maxMiB = Math.max(1, Math.round((opts.proxyMaxBytes || 10 * 1024 * 1024) / (1024 * 1024)));
  let developerText = '';
  developerText += `\n${t.devHeading}\n` + `${t.selected}${t.modeName[runnerMode]}\n` + t.powers[runnerMode];
  developerText += t.network(maxMiB);
  developerText += t.workspace(opts.workspace);
  return developerText;
}

/** The run_js tool description for `mode` (seed 003, describeRunJs). */
export function describeRunJs(mode) {
  const m = normalizeMode(mode);
  const where =
    m === 'page'
      ? 'Current runner mode: page (main thread, Develop mode). The code runs on the console page itself: document, window, localStorage and window.__inpage__ are available, so it can read and change the page (e.g. document.querySelector(...).style.background = ...). An endless loop freezes the page; a timeout only stops waiting, it cannot kill the code.'
      : 'Current runner mode: isolated (Web Worker sandbox). The code runs in a fresh Web Worker: no document, window, DOM or localStorage — referencing them throws ReferenceError. It is killed when it runs past its timeout. fetch, JSON, crypto, timers work.';
  return (
    'Run JavaScript and return its result. The code is the body of an async function: use await and `return` a value (objects are returned as JSON); console.log output is returned too. ' +
    where +
    " Network: fetch CORS-open JSON APIs directly; fetch any other URL through the gateway with fetch('/v1/proxy?url=' + encodeURIComponent(url)) (credentials are added for you); a direct cross-origin fetch failing with 'TypeError: Failed to fetch' is a CORS block — use the proxy instead of retrying."
  );
}
