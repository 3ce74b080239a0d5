// Live CXP traffic: one row per packet (time, from, to, subject, priority, delivery and
// work status), updated in place as its transitions arrive; filters by Volk, thread,
// subject (glob) and status; an events/s sparkline; click a row for its thread.
//
// At most MAX_ROWS packets are kept (the oldest are dropped), and the table is rebuilt
// at most once per animation frame, so 1,000 events/s does not freeze the page.

import { byId, h, clock, glob, frameBatched, sparkline, errText, pretty } from './dom.js';

export const MAX_ROWS = 500;
const HISTORY = 200;
const RATE_SECONDS = 60;

const DELIVERY = {
  packet_delivered: 'delivered',
  packet_acknowledged: 'acknowledged',
  packet_failed: 'failed',
  packet_retried: 'queued',
};

export async function trafficPanel(ctx) {
  const rows = new Map(); // message_id -> packet row
  const rate = new Array(RATE_SECONDS).fill(0);
  let current = 0;
  let selectedThread = null;
  const body = byId('traffic-rows');
  const filters = { volk: byId('f-volk'), thread: byId('f-thread'), subject: byId('f-subject'), status: byId('f-status') };

  function apply(ev, meta = {}) {
    if (!meta.history && !meta.fill) current += 1; // the chart counts live arrivals
    const p = ev.payload || {};
    if (ev.event_type === 'packet_sent' && p.packet) {
      const k = p.packet;
      // A packet already shown (a gap fill replaying what we have) keeps its row as is.
      if (rows.has(k.message_id)) { render(); return; }
      rows.set(k.message_id, {
        id: k.message_id, seq: ev.sequence, ts: ev.timestamp, from: k.from_agent, to: k.to_agent,
        subject: k.subject, priority: k.priority, delivery: k.delivery_status || 'queued',
        work: k.work_status || 'pending', thread: k.thread_id,
      });
      while (rows.size > MAX_ROWS) rows.delete(rows.keys().next().value);
    } else if (p.message_id && rows.has(p.message_id) && ev.sequence > rows.get(p.message_id).seq) {
      // Only newer transitions move a row (a gap fill may replay older ones).
      const r = rows.get(p.message_id);
      if (DELIVERY[ev.event_type]) r.delivery = DELIVERY[ev.event_type];
      if (ev.event_type === 'work_status_changed') r.work = p.new;
      if (ev.event_type === 'priority_changed') r.priority = p.new;
      r.seq = ev.sequence;
    }
    const thread = p.thread_id || p.packet?.thread_id;
    if (selectedThread && thread === selectedThread) refreshThread();
    render();
  }

  function visible() {
    const volk = filters.volk.value.trim().toLowerCase();
    const thread = filters.thread.value.trim();
    const subject = glob(filters.subject.value.trim());
    const status = filters.status.value;
    const out = [];
    for (const r of rows.values()) {
      if (volk && !String(r.from).toLowerCase().includes(volk) && !String(r.to).toLowerCase().includes(volk)) continue;
      if (thread && !String(r.thread).startsWith(thread)) continue;
      if (!subject(r.subject)) continue;
      if (status && r.delivery !== status && r.work !== status) continue;
      out.push(r);
    }
    return out.reverse(); // newest first
  }

  const render = frameBatched(() => {
    const list = visible();
    const frag = document.createDocumentFragment();
    for (const r of list) {
      frag.append(h('tr', { dataset: { messageId: r.id, thread: r.thread }, class: r.thread === selectedThread ? 'selected' : null },
        h('td', {}, r.seq), h('td', {}, clock(r.ts)), h('td', {}, r.from), h('td', {}, r.to),
        h('td', {}, r.subject), h('td', {}, r.priority),
        h('td', { class: `st-${r.delivery} delivery` }, r.delivery), h('td', { class: `st-${r.work} work` }, r.work),
        h('td', { title: r.thread }, String(r.thread).slice(0, 8))));
    }
    body.replaceChildren(frag);
    byId('traffic-count').textContent = `${list.length} shown of ${rows.size} kept (max ${MAX_ROWS})`;
  });

  body.addEventListener('click', (e) => {
    const tr = e.target.closest('tr');
    if (!tr) return;
    selectedThread = tr.dataset.thread;
    refreshThread();
    render();
  });
  for (const f of Object.values(filters)) f.addEventListener('input', render);

  let threadTimer = null;
  function refreshThread() {
    clearTimeout(threadTimer);
    threadTimer = setTimeout(showThread, 150);
  }

  async function showThread() {
    const view = byId('thread-view');
    const id = selectedThread;
    if (!id) return;
    try {
      const r = await ctx.gw.call('cxp.status', { thread_id: id });
      if (id !== selectedThread) return;
      view.replaceChildren(
        h('h2', {}, `Thread ${id}`),
        h('p', { class: 'muted' }, `${r.total ?? r.packets?.length ?? 0} packets`),
        ...(r.packets || []).map(packetCard),
      );
    } catch (e) {
      view.replaceChildren(h('h2', {}, `Thread ${id}`), h('p', { class: 'error' }, errText(e)));
    }
  }

  function packetCard(p) {
    const hd = p.packet?.headers || p.packet || {};
    const transitions = [
      ...(p.delivery_history || []).map((t) => ({ ...t, kind: 'delivery' })),
      ...(p.work_history || []).map((t) => ({ ...t, kind: 'work' })),
    ].sort((a, b) => (a.sequence ?? 0) - (b.sequence ?? 0));
    return h('div', { class: 'packet', dataset: { messageId: hd.message_id } },
      h('p', {}, h('b', {}, `${hd.from_agent} → ${hd.to_agent}`), ` ${hd.subject} · prio ${p.priority ?? hd.priority}`,
        ' · ', h('span', { class: `st-${p.delivery_status}` }, p.delivery_status), ' / ',
        h('span', { class: `st-${p.work_status}` }, p.work_status)),
      h('ul', { class: 'events' }, transitions.map((t) => h('li', { class: 'transition' },
        `#${t.sequence ?? '?'} ${clock(t.at)} ${t.kind}: ${t.status ?? t.new ?? ''}`))),
      h('details', {}, h('summary', {}, 'payload'), h('pre', {}, pretty(p.packet?.payload ?? hd.payload ?? null))));
  }

  const chart = byId('rate-chart');
  setInterval(() => {
    rate.push(current);
    rate.shift();
    byId('rate-now').textContent = String(current);
    current = 0;
    sparkline(chart, rate);
  }, 1000);

  await ctx.gw.follow('cxp.traffic', apply, { history: HISTORY });
  render();
}
