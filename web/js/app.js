// The console page: connects to the gateway, wires settings, chat, conversations and
// the workspace panel to the agent loop (agent.js), and runs the agent's tools.

import { AgentRuntime } from './agent.js';
import { Gateway, GatewayError } from './api.js';
import { normalizeMode } from './prompts.js';
import {
  escapeHtml,
  renderAssistantHtml,
  renderToolCallHtml,
  renderToolResultHtml,
  renderUserMessageHtml,
} from './render.js';
import { runJs } from './runner.js';
import { proxyAwareFetch, proxyUrl } from './runner-shared.js';
import { WORKSPACE_ACTIONS, formatGatewayResult, formatRunJsResult } from './tools.js';

const $ = (sel) => document.querySelector(sel);
const SETTINGS_KEY = 'tabgate.console.settings';

// ---- settings ---------------------------------------------------------------------------

function loadSettings() {
  let s = {};
  try {
    s = JSON.parse(localStorage.getItem(SETTINGS_KEY) || '{}') || {};
  } catch {
    s = {};
  }
  return {
    runnerMode: normalizeMode(s.runnerMode),
    model: typeof s.model === 'string' ? s.model : '',
    locale: s.locale === 'zh' ? 'zh' : 'en',
    stream: s.stream !== false,
  };
}

const settings = loadSettings();

function saveSettings() {
  localStorage.setItem(SETTINGS_KEY, JSON.stringify(settings));
}

function bindSettings() {
  const mode = $('#runner-mode');
  const model = $('#model');
  const locale = $('#locale');
  const stream = $('#stream');
  mode.value = settings.runnerMode;
  model.value = settings.model;
  locale.value = settings.locale;
  stream.checked = settings.stream;
  document.body.dataset.runnerMode = settings.runnerMode;
  // The model hears about a mode change with the next message (a badge), not now.
  mode.addEventListener('change', () => {
    settings.runnerMode = normalizeMode(mode.value);
    document.body.dataset.runnerMode = settings.runnerMode;
    saveSettings();
  });
  model.addEventListener('change', () => {
    settings.model = model.value.trim();
    saveSettings();
  });
  locale.addEventListener('change', () => {
    settings.locale = locale.value === 'zh' ? 'zh' : 'en';
    saveSettings();
  });
  stream.addEventListener('change', () => {
    settings.stream = stream.checked;
    saveSettings();
  });
  $('#settings').addEventListener('submit', (e) => e.preventDefault());
}

// ---- gateway, fetch and window.__inpage__ --------------------------------------------------

const gw = new Gateway(location.origin, localStorage);
let catalogue = [];
let proxyMaxBytes;
let workspace = { url: '', title: '' };
let agent = null;

// Code run in page mode calls fetch('/v1/proxy?url=…') like the seed shows; the console's
// token is added to those requests (and only those).
const realFetch = window.fetch.bind(window);
window.fetch = proxyAwareFetch(realFetch, () => ({ token: gw.token, origin: location.origin }));

/** The namespace page-mode code gets (also as the `__inpage__` argument). */
window.__inpage__ = Object.freeze({
  version: 1,
  get runnerMode() {
    return settings.runnerMode;
  },
  fetch: (...a) => window.fetch(...a),
  proxyFetch: (url, init) => window.fetch(proxyUrl(url), init),
  tools: Object.freeze({ call: (name, args) => gw.callTool(name, args) }),
  openInWorkspace: (url) => executeTool('open_in_workspace', { url }),
  workspace: () => ({ ...workspace }),
});

function setStatus(text) {
  $('#status').textContent = text;
}

// ---- the workspace panel ----------------------------------------------------------------

async function refreshWorkspace() {
  try {
    const shot = await gw.callTool('browser_screenshot', {});
    if (shot && shot.ok && shot.image_png) {
      const img = $('#ws-shot');
      img.src = `data:image/png;base64,${shot.image_png}`;
      img.hidden = false;
      $('#ws-empty').hidden = true;
    }
    const s = await gw.session();
    const tab = (s.session && s.session.current_tab) || {};
    workspace = { url: tab.url || '', title: tab.title || '' };
    $('#ws-url').textContent = workspace.url ? `${workspace.title ? `${workspace.title} — ` : ''}${workspace.url}` : 'No page open yet';
    $('#workspace').dataset.url = workspace.url;
    $('#workspace').dataset.shots = String(Number($('#workspace').dataset.shots || 0) + 1);
  } catch (e) {
    showNotice(`workspace refresh failed: ${e.message || e}`);
  }
}

// ---- tools ------------------------------------------------------------------------------

async function executeTool(name, args) {
  if (name === 'run_js') {
    const r = await runJs({
      mode: settings.runnerMode,
      code: args.code,
      timeoutMs: args.timeout_ms,
      auth: { token: gw.token, origin: location.origin },
      inpage: window.__inpage__,
    });
    return formatRunJsResult(r);
  }
  if (name === 'open_in_workspace') {
    const body = await gw.callTool('browser_navigate', { url: args.url });
    await refreshWorkspace();
    const text = formatGatewayResult(body);
    return body && body.ok ? `${text}\nThe page is shown in the workspace panel.` : text;
  }
  if (name.startsWith('browser_') && catalogue.some((t) => t.name === name)) {
    const body = await gw.callTool(name, args);
    if (WORKSPACE_ACTIONS.has(name)) await refreshWorkspace();
    return formatGatewayResult(body);
  }
  return `error: no tool named ${JSON.stringify(name)}; the tools are run_js, open_in_workspace and the listed browser_* tools`;
}

// ---- the chat ---------------------------------------------------------------------------

const toolNames = new Map();

function messageElement(m) {
  const div = document.createElement('div');
  div.className = `msg ${m.role}`;
  if (m.role === 'user') {
    div.innerHTML = renderUserMessageHtml(m.content);
  } else if (m.role === 'assistant') {
    let html = m.content ? renderAssistantHtml(m.content) : '';
    for (const c of m.tool_calls || []) {
      toolNames.set(c.id, c.function?.name);
      html += renderToolCallHtml(c);
    }
    div.innerHTML = html;
  } else if (m.role === 'tool') {
    div.innerHTML = renderToolResultHtml(m.content, m.name || toolNames.get(m.tool_call_id));
  } else {
    return null;
  }
  return div;
}

function scrollChat() {
  const chat = $('#chat');
  chat.scrollTop = chat.scrollHeight;
}

function appendMessage(m) {
  $('#chat .streaming')?.remove();
  const el = messageElement(m);
  if (el) $('#chat').appendChild(el);
  $('#chat').dataset.count = String(agent ? agent.conversation.messages.length : 0);
  scrollChat();
}

function renderConversation(conv) {
  const chat = $('#chat');
  chat.innerHTML = '';
  toolNames.clear();
  for (const m of conv.messages) {
    const el = messageElement(m);
    if (el) chat.appendChild(el);
  }
  chat.dataset.count = String(conv.messages.length);
  chat.dataset.conversation = conv.id;
  markCurrentConversation();
  scrollChat();
}

function showStreaming(text) {
  let el = $('#chat .streaming');
  if (!el) {
    el = document.createElement('div');
    el.className = 'msg assistant streaming';
    $('#chat').appendChild(el);
  }
  el.innerHTML = renderAssistantHtml(text);
  scrollChat();
}

function showNotice(text) {
  const div = document.createElement('div');
  div.className = 'msg notice';
  div.textContent = text;
  $('#chat').appendChild(div);
  scrollChat();
}

function onAgentEvent(ev) {
  const chat = $('#chat');
  if (ev.type === 'reset') renderConversation(ev.conversation);
  else if (ev.type === 'message') appendMessage(ev.message);
  else if (ev.type === 'busy') {
    chat.dataset.state = 'busy';
    $('#send').disabled = false; // further messages are queued
  } else if (ev.type === 'idle') {
    $('#chat .streaming')?.remove();
    chat.dataset.state = 'idle';
  } else if (ev.type === 'error') showNotice(ev.error);
}

// ---- conversations ----------------------------------------------------------------------

function markCurrentConversation() {
  const id = agent && agent.conversation.id;
  for (const li of document.querySelectorAll('#conversations li')) {
    li.classList.toggle('current', li.dataset.id === id);
  }
}

async function refreshConversations() {
  let list = [];
  try {
    list = await gw.conversations();
  } catch (e) {
    showNotice(`cannot list conversations: ${e.message || e}`);
    return;
  }
  const ul = $('#conversations');
  ul.innerHTML = '';
  for (const c of list) {
    const li = document.createElement('li');
    li.dataset.id = c.id;
    li.innerHTML =
      `<button type="button" class="open" title="${escapeHtml(c.title)}">${escapeHtml(c.title || c.id)}</button>` +
      `<button type="button" class="delete" aria-label="Delete ${escapeHtml(c.title || c.id)}" title="Delete">×</button>`;
    li.querySelector('.open').addEventListener('click', () => openConversation(c.id));
    li.querySelector('.delete').addEventListener('click', async () => {
      await gw.deleteConversation(c.id).catch((e) => showNotice(e.message));
      if (agent.conversation.id === c.id) agent.startConversation();
      refreshConversations();
    });
    ul.appendChild(li);
  }
  markCurrentConversation();
}

async function openConversation(id) {
  if (agent.busy) {
    showNotice('wait for the current turn to finish before switching conversations');
    return;
  }
  try {
    agent.loadConversation(await gw.conversation(id));
  } catch (e) {
    showNotice(`cannot load the conversation: ${e.message || e}`);
  }
}

// ---- connecting -------------------------------------------------------------------------

function keyFromHash() {
  const m = /(?:^#|&)key=([^&]+)/.exec(location.hash);
  return m ? decodeURIComponent(m[1]) : '';
}

function showConnect(message) {
  const dlg = $('#connect');
  const err = $('#connect-error');
  err.hidden = !message;
  err.textContent = message || '';
  if (!dlg.open) dlg.showModal();
}

async function connectWith(key) {
  try {
    await gw.connect(key);
    return true;
  } catch (e) {
    showConnect(`connecting failed: ${e.message || e}`);
    return false;
  }
}

async function start() {
  let info;
  try {
    info = await gw.session();
  } catch (e) {
    if (e instanceof GatewayError && e.status === 401) {
      gw.disconnect();
      showConnect('the console token is no longer valid; connect again');
      return;
    }
    setStatus(`gateway unreachable: ${e.message || e}`);
    return;
  }
  catalogue = await gw.tools().catch(() => []);
  proxyMaxBytes = info.proxy && info.proxy.max_bytes;
  const tab = info.session && info.session.current_tab;
  if (tab && tab.url) workspace = { url: tab.url, title: tab.title || '' };
  const llm = info.llm || {};
  setStatus(
    `session ${gw.sessionId}` + (llm.configured ? ` · model ${settings.model || llm.model || '?'}` : ' · no model configured (llm.base_url)'),
  );
  if (!settings.model && llm.model) $('#model').placeholder = llm.model;
  gw.models()
    .then((m) => {
      const dl = $('#models');
      dl.innerHTML = '';
      for (const x of (m && m.data) || []) {
        const o = document.createElement('option');
        o.value = x.id;
        dl.appendChild(o);
      }
    })
    .catch(() => {});

  agent = new AgentRuntime({
    getRunnerMode: () => settings.runnerMode,
    getLocale: () => settings.locale,
    getCatalogue: () => catalogue,
    getWorkspace: () => workspace,
    getProxyMaxBytes: () => proxyMaxBytes,
    callModel: (req) =>
      gw.chat({ ...req, model: settings.model, stream: settings.stream, onText: (t) => t && showStreaming(t) }),
    executeTool,
    save: async (conv) => {
      await gw.saveConversation(conv, settings.runnerMode);
      refreshConversations();
    },
    onEvent: onAgentEvent,
  });
  renderConversation(agent.conversation);
  await refreshConversations();
  if (workspace.url) refreshWorkspace();
  document.body.dataset.ready = '1';
}

function bindUi() {
  $('#composer').addEventListener('submit', (e) => {
    e.preventDefault();
    const input = $('#input');
    const text = input.value.trim();
    if (!text || !agent) return;
    input.value = '';
    agent.send(text);
  });
  $('#input').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      $('#composer').requestSubmit();
    }
  });
  $('#new-conversation').addEventListener('click', () => {
    if (agent && !agent.busy) agent.startConversation();
  });
  $('#ws-refresh').addEventListener('click', () => refreshWorkspace());
  $('#connect-form').addEventListener('submit', async (e) => {
    e.preventDefault();
    const key = $('#api-key').value.trim();
    if (!key) return;
    if (await connectWith(key)) {
      $('#api-key').value = '';
      $('#connect').close();
      start();
    }
  });
}

async function boot() {
  bindSettings();
  bindUi();
  const key = keyFromHash();
  if (key) {
    history.replaceState(null, '', location.pathname + location.search);
    if (!(await connectWith(key))) return;
  }
  if (!gw.connected) {
    showConnect();
    return;
  }
  await start();
}

boot();
