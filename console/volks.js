// Volks: the hierarchy from volk.list as a tree (parent -> children) with health,
// active tasks and last activity; volk.lifecycle events as they happen, escalations
// highlighted; the human escalation queue (agents.escalations).

import { byId, h, clock, age, errText } from './dom.js';

const MAX_EVENTS = 200;
const PAGE = 100;

/** Every Volk, following volk.list's offset/limit pages. */
async function allVolks(gw) {
  const out = [];
  for (let offset = 0; ; offset += PAGE) {
    const r = await gw.call('volk.list', { offset, limit: PAGE });
    out.push(...(r.volks || []));
    if (!r.has_more || !(r.volks || []).length) return out;
  }
}

/** Nests Volks under their parents; Volks whose parent is unknown are roots. */
export function tree(volks) {
  const by = new Map(volks.map((v) => [v.alias, { ...v, children: [] }]));
  const roots = [];
  for (const v of by.values()) {
    const parent = v.parent && by.get(v.parent);
    if (parent && parent !== v) parent.children.push(v); else roots.push(v);
  }
  const sort = (list) => { list.sort((a, b) => a.alias.localeCompare(b.alias)); list.forEach((v) => sort(v.children)); return list; };
  return sort(roots);
}

function node(v) {
  const health = v.health ?? v.status ?? 'unknown';
  // active_tasks is a map task_id -> task in the Volk view (a count in some clients).
  const active = v.active_tasks;
  const tasks = typeof active === 'number' ? active : active && typeof active === 'object' ? Object.keys(active).length : undefined;
  return h('li', { dataset: { alias: v.alias } },
    h('span', { class: 'volk' }, h('b', {}, v.alias), h('span', { class: `st-${health}` }, health),
      tasks !== undefined ? h('span', { class: 'muted' }, `${tasks} active task${tasks === 1 ? '' : 's'}`) : null,
      v.status && v.status !== health ? h('span', { class: `st-${v.status}` }, v.status) : null,
      h('span', { class: 'muted' }, `last ${age(v.last_activity)}`),
      (v.capabilities || []).length ? h('span', { class: 'muted' }, (v.capabilities || []).join(', ')) : null),
    v.children.length ? h('ul', {}, v.children.map(node)) : null);
}

function describe(ev) {
  const p = ev.payload || {};
  switch (ev.event_type) {
    case 'escalated': return `${p.alias} escalated to ${p.escalated_to}: ${p.reason} (path ${(p.path || []).join(' → ')})`;
    case 'human_escalation_queued': return `human escalation queued: ${JSON.stringify(p).slice(0, 160)}`;
    case 'health_changed': return `${p.alias} ${p.old} → ${p.new}${p.details ? `: ${p.details}` : ''}`;
    case 'task_started': return `${p.alias} started ${p.task_id}: ${p.description ?? ''}`;
    case 'task_completed': return `${p.alias} finished ${p.task_id}: ${p.outcome} in ${p.duration_ms} ms`;
    case 'spawned': return `${p.parent} spawned ${p.alias} (${p.driver}): ${p.purpose}`;
    case 'terminated': return `${p.alias} terminated: ${p.reason}`;
    case 'registered': return `${p.alias}${p.parent ? ` under ${p.parent}` : ''} (${(p.capabilities || []).join(', ')})`;
    case 'deregistered': return `${p.alias}: ${p.reason}`;
    default: return `${p.alias ?? ''} ${JSON.stringify(p).slice(0, 160)}`;
  }
}

export async function volksPanel(ctx) {
  const list = byId('lifecycle-events');
  let timer = null;

  async function refresh() {
    try {
      const volks = await allVolks(ctx.gw);
      byId('volk-tree').replaceChildren(...tree(volks).map(node));
      byId('volk-error').textContent = volks.length ? '' : 'No Volks registered.';
    } catch (e) {
      byId('volk-error').textContent = errText(e);
    }
    if (ctx.can('agents.escalations')) {
      try {
        const q = await ctx.gw.call('agents.escalations', {});
        const queue = q.escalations || [];
        byId('escalations').replaceChildren(...(queue.length
          ? queue.map((x) => h('li', { class: 'escalation' }, JSON.stringify(x).slice(0, 200)))
          : [h('li', { class: 'muted' }, 'nothing waits for a human')]));
      } catch (e) {
        byId('escalations').replaceChildren(h('li', { class: 'muted' }, errText(e)));
      }
    }
  }

  function apply(ev) {
    const escalation = ev.event_type === 'escalated' || ev.event_type === 'human_escalation_queued';
    list.prepend(h('li', { class: escalation ? 'escalation' : null, dataset: { sequence: ev.sequence } },
      `#${ev.sequence} ${clock(ev.timestamp)} ${ev.event_type}: ${describe(ev)}`));
    while (list.childElementCount > MAX_EVENTS) list.lastElementChild.remove();
    clearTimeout(timer);
    timer = setTimeout(refresh, 500); // a burst of lifecycle events costs one volk.list
  }

  await refresh();
  await ctx.gw.follow('volk.lifecycle', apply, { history: 50 });
  setInterval(refresh, 10000);
}
