// Gateway: version and uptime (gateway.info), subscriptions per topic, connected
// clients (gateway.clients), headline metrics from /metrics, and this page's own
// resume counters (reconnects, duplicates dropped, gaps).

import { byId, h, age, errText } from './dom.js';

const HEADLINE = [
  'orchestrata_gateway_connected_clients',
  'orchestrata_gateway_total_connections',
  'orchestrata_gateway_messages_received_total',
  'orchestrata_gateway_messages_sent_total',
  'orchestrata_gateway_auth_success_total',
  'orchestrata_gateway_auth_failure_total',
  'orchestrata_gateway_events_dropped_total',
];

/** Sums each series of the Prometheus text over its labels. */
export function parseMetrics(text) {
  const sums = new Map();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+([^\s]+)/);
    if (!m) continue;
    const v = Number(m[3]);
    if (Number.isFinite(v)) sums.set(m[1], (sums.get(m[1]) || 0) + v);
  }
  return sums;
}

function dl(el, pairs) {
  el.replaceChildren(...pairs.flatMap(([k, v]) => [h('dt', {}, k), h('dd', { dataset: { key: k } }, v)]));
}

export async function gatewayPanel(ctx) {
  async function refresh() {
    try {
      const [info, clients] = await Promise.all([ctx.gw.call('gateway.info', {}), ctx.gw.call('gateway.clients', {})]);
      const subs = Object.entries(info.subscription_counts || {}).filter(([, n]) => n > 0).map(([t, n]) => `${t}: ${n}`).join(', ');
      const s = ctx.gw.stats;
      dl(byId('gw-info'), [
        ['version', info.version], ['uptime', `${Math.round(info.uptime_seconds)} s`],
        ['this client', `${ctx.auth.client_id} (${ctx.gw.auth?.scope ?? ctx.scope})`],
        ['subscriptions', subs || 'none'], ['methods', String((info.capabilities || []).length)],
        ['reconnects', String(s.reconnects)], ['duplicates dropped', String(s.duplicatesDropped)],
        ['gaps', String(s.gaps)], ['events processed', String(s.events)],
      ]);
      byId('gw-clients').replaceChildren(...(clients.clients || []).map((c) => h('tr', {},
        h('td', { title: c.client_id }, c.client_id.slice(0, 16)), h('td', {}, c.client_metadata?.client_name ?? ''),
        h('td', {}, c.auth_scope ?? 'unauthenticated'), h('td', {}, age(c.connected_at)),
        h('td', {}, age(c.last_activity)), h('td', {}, (c.subscriptions || []).length))));
    } catch (e) {
      dl(byId('gw-info'), [['error', errText(e)]]);
    }
    try {
      const res = await fetch('/metrics', { cache: 'no-store' });
      const sums = parseMetrics(await res.text());
      dl(byId('gw-metrics'), HEADLINE.filter((k) => sums.has(k)).map((k) => [k.replace('orchestrata_gateway_', ''), String(sums.get(k))]));
    } catch (e) {
      dl(byId('gw-metrics'), [['error', String(e)]]);
    }
  }
  document.addEventListener('console-tab', (e) => { if (e.detail === 'gateway') refresh(); });
  setInterval(() => { if (!document.getElementById('panel-gateway').hidden) refresh(); }, 2000);
  await refresh();
}
