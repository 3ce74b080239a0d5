// History: a scrubber over a topic's sequence range (buffer_range of gateway.replay).
// Dragging it replays the WINDOW events up to that sequence (gateway.replay by
// sequence_from/sequence_to) and folds them into the view as of that point; "live"
// returns to the tail and follows it.

import { byId, h, clock, errText } from './dom.js';

const WINDOW = 500;
const SHOWN = 100;

/** What an event says about its entity: [key, state text]. */
export function entity(topic, ev) {
  const p = ev.payload || {};
  switch (topic) {
    case 'cxp.traffic': {
      if (p.packet) return [p.packet.message_id, `${p.packet.from_agent} → ${p.packet.to_agent} ${p.packet.subject}: sent`];
      if (p.message_id) return [p.message_id, ev.event_type === 'work_status_changed' ? `work ${p.new}` : ev.event_type.replace('packet_', '')];
      return [p.thread_id ?? ev.key, ev.event_type];
    }
    case 'volk.lifecycle': return [p.alias ?? ev.key, ev.event_type === 'health_changed' ? `health ${p.new}` : ev.event_type];
    case 'workflow.events': return [p.workflow_id ?? ev.key, p.step ? `${ev.event_type} ${p.step}` : ev.event_type];
    case 'session.events': return [p.session_id ?? ev.key, ev.event_type];
    case 'governance.decisions': return [`${p.subject ?? ''} ${p.action ?? ''}`.trim() || ev.key, p.result ?? ev.event_type];
    case 'gateway.presence': return [p.client_id ?? ev.key, ev.event_type];
    default: return [ev.key ?? ev.event_type, ev.event_type];
  }
}

function summary(ev) {
  const s = JSON.stringify(ev.payload ?? {});
  return s.length > 120 ? `${s.slice(0, 117)}…` : s;
}

export async function historyPanel(ctx) {
  const topic = byId('h-topic');
  const scrub = byId('scrub');
  const live = byId('live');
  let following = true;
  let timer = null;
  let request = 0;

  // Topics this scope may not read are not offered.
  for (const opt of [...topic.options]) {
    const needs = ctx.info.topic_scopes?.[opt.value];
    if (needs === 'read_write' && ctx.scope === 'read_only') opt.remove();
  }

  async function show(at) {
    const mine = ++request;
    const t = topic.value;
    try {
      let r;
      if (at === null) {
        r = await ctx.gw.call('gateway.replay', { topic: t, count: WINDOW });
      } else {
        const oldest = Number(scrub.min);
        r = await ctx.gw.call('gateway.replay', { topic: t, sequence_from: Math.max(oldest, at - WINDOW + 1), sequence_to: at });
      }
      if (mine !== request) return; // a newer drag position already asked
      const range = r.buffer_range || {};
      const empty = range.newest_sequence === null || range.newest_sequence === undefined;
      scrub.min = empty ? 0 : range.oldest_sequence;
      scrub.max = empty ? 0 : range.newest_sequence;
      scrub.disabled = empty;
      if (at === null) scrub.value = scrub.max;
      const pos = at === null ? range.newest_sequence : at;
      byId('scrub-pos').textContent = empty ? 'empty topic'
        : `#${pos} of #${range.oldest_sequence}..#${range.newest_sequence}${following ? ' (live)' : ''}`;
      byId('scrub-pos').dataset.position = empty ? '' : String(pos);
      render(t, r.events || [], pos);
      byId('history-error').textContent = '';
    } catch (e) {
      if (mine === request) byId('history-error').textContent = errText(e);
    }
  }

  function render(t, events, pos) {
    byId('history-title').textContent = `Events up to #${pos ?? '—'}`;
    const shown = events.slice(-SHOWN).reverse();
    byId('history-events').replaceChildren(...shown.map((ev) => h('tr', { dataset: { sequence: ev.sequence } },
      h('td', {}, ev.sequence), h('td', {}, clock(ev.timestamp)), h('td', {}, ev.event_type),
      h('td', { title: ev.key ?? '' }, String(ev.key ?? '').slice(0, 12)), h('td', {}, summary(ev)))));
    const view = new Map();
    for (const ev of events) {
      const [key, state] = entity(t, ev);
      view.delete(key);
      view.set(key, [state, ev.sequence]);
    }
    byId('history-view').replaceChildren(...[...view.entries()].reverse().slice(0, SHOWN).map(([k, [s, seq]]) =>
      h('tr', {}, h('td', { title: String(k) }, String(k).slice(0, 16)), h('td', {}, s), h('td', {}, seq))));
  }

  function setLive(on) {
    following = on;
    live.classList.toggle('active', on);
  }

  scrub.addEventListener('input', () => {
    setLive(false);
    const at = Number(scrub.value);
    byId('scrub-pos').textContent = `#${at}…`;
    clearTimeout(timer);
    timer = setTimeout(() => show(at), 60);
  });
  live.addEventListener('click', () => { setLive(true); show(null); });
  topic.addEventListener('change', () => { setLive(true); show(null); });

  let dirty = false;
  ctx.gw.onEvent((ev) => { if (ev.topic === topic.value) dirty = true; });
  setInterval(() => {
    // Following the tail: refresh when the topic moved (followed topics say so at once;
    // the others are checked every few seconds).
    if (!following || document.getElementById('panel-history').hidden) return;
    if (dirty || Date.now() % 5000 < 1000) { dirty = false; show(null); }
  }, 1000);
  document.addEventListener('console-tab', (e) => { if (e.detail === 'history' && following) show(null); });
  await show(null);
}
