// Entry point: sign-in, tabs, connection status, gap notices, scope gating, and the
// panels (each one module). The token lives in sessionStorage only: it never appears in
// the URL, and closing the tab forgets it.

import { Gateway } from './rpc.js';
import { byId, h, errText } from './dom.js';
import { trafficPanel } from './traffic.js';
import { volksPanel } from './volks.js';
import { governancePanel } from './governance.js';
import { sessionsPanel } from './sessions.js';
import { historyPanel } from './history.js';
import { gatewayPanel } from './gateway.js';

const TOKEN_KEY = 'orchestrata.console.token';
const SCOPES = ['read_only', 'read_write', 'admin'];

/** Whether `scope` grants what `required` asks (`none`: callable by anyone). */
export function allows(scope, required) {
  if (!required || required === 'none') return true;
  return SCOPES.indexOf(scope) >= SCOPES.indexOf(required);
}

function wsUrl() {
  const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
  return `${proto}//${location.host}/`;
}

/** A visible notice; `action` = {label, run} adds a button (e.g. "fill"). */
function notice(text, action) {
  const box = h('div', { class: 'notice', role: 'status' }, h('span', {}, text));
  if (action) {
    const btn = h('button', { class: 'notice-action' }, action.label);
    btn.addEventListener('click', async () => {
      btn.disabled = true;
      try {
        const done = await action.run();
        box.replaceChildren(h('span', {}, `${text} — ${done}`));
        setTimeout(() => box.remove(), 4000);
      } catch (e) {
        btn.disabled = false;
        box.append(h('span', { class: 'error' }, errText(e)));
      }
    });
    box.append(btn);
  }
  box.append(h('button', { class: 'notice-close', onclick: () => box.remove() }, '×'));
  byId('notices').append(box);
  return box;
}

function showTab(name) {
  for (const b of document.querySelectorAll('#tabs button')) b.classList.toggle('active', b.dataset.tab === name);
  for (const p of document.querySelectorAll('.panel')) p.hidden = p.id !== `panel-${name}`;
  document.dispatchEvent(new CustomEvent('console-tab', { detail: name }));
}

/** Removes every control whose method the token's scope may not call. */
function gateControls(ctx) {
  for (const el of document.querySelectorAll('[data-method]')) {
    if (!ctx.can(el.dataset.method)) el.remove();
  }
}

async function signIn(token) {
  const status = byId('conn');
  let gw;
  gw = new Gateway({
    url: wsUrl(),
    token,
    onStatus: (s, detail) => {
      status.className = `pill ${s}`;
      status.textContent = detail && s !== 'open' ? `${s} (${detail})` : s;
      status.dataset.state = s;
    },
    onGap: (topic, from, to, fillable) => {
      const text = `Gap on ${topic}: events #${from}..#${to} were not received.`;
      notice(text, fillable ? { label: 'fill', run: async () => `filled ${await gw.fill(topic, from, to)} events` } : undefined);
    },
    onReset: (topic) => notice(`The log of ${topic} was recreated; showing it from its new start.`),
  });
  const auth = await gw.start();
  const info = await gw.call('gateway.info', {});
  const required = new Map((info.methods || []).map((m) => [m.name, m.scope]));
  const ctx = {
    gw,
    auth,
    info,
    scope: auth.scope,
    can: (method) => required.has(method) && allows(auth.scope, required.get(method)),
    notice,
  };
  window.orchestrataConsole = ctx; // for operators poking from devtools, and the e2e test
  return ctx;
}

async function boot(token) {
  const err = byId('signin-error');
  err.textContent = '';
  let ctx;
  try {
    ctx = await signIn(token);
  } catch (e) {
    sessionStorage.removeItem(TOKEN_KEY);
    err.textContent = `Sign-in refused: ${errText(e)}`;
    byId('signin').hidden = false;
    return;
  }
  sessionStorage.setItem(TOKEN_KEY, token);
  byId('signin').hidden = true;
  byId('app').hidden = false;
  byId('tabs').hidden = false;
  byId('signout').hidden = false;
  const scope = byId('scope');
  scope.hidden = false;
  scope.textContent = ctx.scope;
  document.body.dataset.scope = ctx.scope;
  gateControls(ctx);
  const panels = [trafficPanel, volksPanel, governancePanel, sessionsPanel, historyPanel, gatewayPanel];
  for (const start of panels) {
    start(ctx).catch((e) => notice(`${start.name}: ${errText(e)}`));
  }
  document.body.dataset.ready = 'true'; // signed in, controls gated, panels starting
}

document.addEventListener('DOMContentLoaded', () => {
  for (const b of document.querySelectorAll('#tabs button')) b.addEventListener('click', () => showTab(b.dataset.tab));
  byId('signin-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const token = byId('token').value.trim();
    byId('token').value = '';
    if (token) boot(token);
  });
  byId('signout').addEventListener('click', () => {
    sessionStorage.removeItem(TOKEN_KEY);
    window.orchestrataConsole?.gw.close();
    location.reload();
  });
  const saved = sessionStorage.getItem(TOKEN_KEY);
  if (saved) boot(saved);
});
