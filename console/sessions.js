// Sessions and workflows. Sessions: session.list, kept current by session.events.
// Workflows: folded from workflow.events (replayed, then live) into one row per run
// with its status and current step; pause / resume / cancel buttons appear only when
// the token's scope may call those methods (never for read_only), and the start form
// likewise. The server checks the scope again on every call.

import { byId, h, age, frameBatched, errText } from './dom.js';

const WORKFLOW_STATUS = {
  started: 'running', resumed: 'running', paused: 'paused', cancelled: 'cancelled',
  completed: 'completed', failed: 'failed',
};

/** Folds one workflow.events event into `runs` (workflow_id -> row). */
export function foldWorkflow(runs, ev) {
  const p = ev.payload || {};
  if (!p.workflow_id) return;
  const run = runs.get(p.workflow_id) || { id: p.workflow_id, name: '', status: 'running', step: '' };
  if (ev.event_type === 'started') run.name = p.name;
  if (WORKFLOW_STATUS[ev.event_type]) run.status = WORKFLOW_STATUS[ev.event_type];
  if (ev.event_type === 'step_started') run.step = p.step + (p.assigned_to && p.assigned_to !== p.step ? ` (${p.assigned_to})` : '');
  if (ev.event_type === 'step_completed') run.step = `${p.step} ✓`;
  run.updated = ev.timestamp;
  run.seq = ev.sequence;
  runs.set(p.workflow_id, run);
}

export async function sessionsPanel(ctx) {
  const runs = new Map();
  const sessions = new Map();

  const renderRuns = frameBatched(() => {
    const rows = [...runs.values()].sort((a, b) => b.seq - a.seq).map((r) => {
      const actions = h('td', { class: 'controls' });
      const button = (method, label, enabled) => {
        if (!ctx.can(method) || !enabled) return;
        actions.append(h('button', {
          class: `control ${method === 'workflow.cancel' ? 'danger' : ''}`,
          dataset: { method, workflow: r.id },
          onclick: () => control(method, r.id),
        }, label));
      };
      const open = r.status === 'running' || r.status === 'paused';
      button('workflow.pause', 'pause', r.status === 'running');
      button('workflow.resume', 'resume', r.status === 'paused');
      button('workflow.cancel', 'cancel', open);
      return h('tr', { dataset: { workflow: r.id } }, h('td', { title: r.id }, r.id.slice(0, 16)), h('td', {}, r.name),
        h('td', { class: `st-${r.status} status` }, r.status), h('td', {}, r.step), h('td', {}, age(r.updated)), actions);
    });
    byId('workflows').replaceChildren(...rows);
  });

  async function control(method, id) {
    byId('workflows-error').textContent = '';
    try {
      await ctx.gw.call(method, { workflow_id: id });
    } catch (e) {
      byId('workflows-error').textContent = `${method}: ${errText(e)}`;
    }
  }

  const start = document.getElementById('workflow-start');
  if (start) {
    start.addEventListener('submit', async (e) => {
      e.preventDefault();
      byId('workflows-error').textContent = '';
      let params;
      try {
        params = JSON.parse(byId('w-params').value || '{}');
      } catch (err) {
        byId('workflows-error').textContent = `params is not JSON: ${err.message}`;
        return;
      }
      try {
        await ctx.gw.call('workflow.start', { name: byId('w-name').value.trim(), params });
      } catch (err) {
        byId('workflows-error').textContent = `workflow.start: ${errText(err)}`;
      }
    });
  }

  function renderSessions() {
    byId('sessions').replaceChildren(...[...sessions.values()].map((s) => h('tr', { dataset: { session: s.session_id } },
      h('td', { title: s.session_id }, String(s.session_id).slice(0, 12)), h('td', {}, s.portfolio_id ?? ''),
      h('td', { class: `st-${s.status}` }, s.status ?? ''), h('td', {}, age(s.opened_at)),
      h('td', {}, (s.goals || []).join('; ')))));
  }

  async function loadSessions() {
    try {
      const r = await ctx.gw.call('session.list', { limit: 100 });
      sessions.clear();
      for (const s of r.sessions || []) sessions.set(s.session_id ?? s.id, { ...s, session_id: s.session_id ?? s.id });
      byId('sessions-error').textContent = '';
      renderSessions();
    } catch (e) {
      byId('sessions-error').textContent = `session.list: ${errText(e)}`;
    }
  }

  function applySession(ev) {
    const p = ev.payload || {};
    if (!p.session_id) return;
    const s = sessions.get(p.session_id) || { session_id: p.session_id };
    if (ev.event_type === 'opened') Object.assign(s, { portfolio_id: p.portfolio_id, goals: p.goals, status: 'open', opened_at: ev.timestamp });
    if (ev.event_type === 'closed') s.status = 'closed';
    if (ev.event_type === 'recovered') s.status = 'open';
    sessions.set(p.session_id, s);
    renderSessions();
    // The session view is the authority (status words, goals, durations): re-read it
    // once a burst of session events has passed.
    clearTimeout(reload);
    reload = setTimeout(loadSessions, 300);
  }
  let reload = null;

  await loadSessions();
  await ctx.gw.follow('session.events', applySession, { history: 200 });
  await ctx.gw.follow('workflow.events', (ev) => { foldWorkflow(runs, ev); renderRuns(); }, { history: 1000 });
  renderRuns();
}
