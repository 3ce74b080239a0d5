// Governance: decisions streaming from governance.decisions (allow / deny / escalate)
// with filters by subject, action and result; and the dry-run form, which calls
// governance.evaluate and shows the would-be result with its Prolog trace.

import { byId, h, clock, glob, frameBatched, errText, pretty } from './dom.js';

const MAX_DECISIONS = 500;

/** The trace lines of an evaluate answer, whatever the field is called. */
export function traceOf(r) {
  const t = r?.trace ?? r?.rule_trace ?? r?.prolog_trace ?? r?.decision?.rule_trace ?? [];
  return Array.isArray(t) ? t : [String(t)];
}

export async function governancePanel(ctx) {
  const decisions = [];
  const body = byId('decisions');
  const f = { subject: byId('g-subject'), action: byId('g-action'), result: byId('g-result') };

  const render = frameBatched(() => {
    const subject = glob(f.subject.value.trim());
    const action = glob(f.action.value.trim());
    const result = f.result.value;
    const frag = document.createDocumentFragment();
    for (let i = decisions.length - 1; i >= 0; i -= 1) {
      const d = decisions[i];
      const p = d.payload || {};
      if (!subject(p.subject) || !action(p.action) || (result && p.result !== result)) continue;
      frag.append(h('tr', { title: (p.rule_trace || []).join('\n') },
        h('td', {}, d.sequence), h('td', {}, clock(d.timestamp)), h('td', {}, p.subject), h('td', {}, p.action),
        h('td', {}, p.resource), h('td', { class: `st-${p.result}` }, p.dry_run ? `${p.result} (dry run)` : p.result),
        h('td', {}, p.latency_us)));
    }
    body.replaceChildren(frag);
  });
  for (const el of Object.values(f)) el.addEventListener('input', render);

  const form = document.getElementById('dryrun-form');
  if (form) {
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      const out = byId('dryrun-result');
      const params = { volk_id: byId('d-volk').value.trim(), action: byId('d-action').value.trim() };
      const resource = byId('d-resource').value.trim();
      if (resource) params.resource = resource;
      out.replaceChildren(h('p', { class: 'muted' }, 'evaluating…'));
      try {
        const r = await ctx.gw.call('governance.evaluate', params);
        const result = r.result ?? r.decision?.result ?? r.allowed;
        out.replaceChildren(
          h('p', {}, 'would be: ', h('b', { class: `st-${result} dryrun-outcome` }, String(result))),
          h('h2', {}, 'Prolog trace'),
          h('ol', { class: 'events dryrun-trace' }, traceOf(r).map((line) => h('li', {}, line))),
          h('details', {}, h('summary', {}, 'full answer'), h('pre', {}, pretty(r))));
      } catch (err) {
        out.replaceChildren(h('p', { class: 'error' }, errText(err)));
      }
    });
  }

  try {
    await ctx.gw.follow('governance.decisions', (ev) => {
      decisions.push(ev);
      if (decisions.length > MAX_DECISIONS) decisions.splice(0, decisions.length - MAX_DECISIONS);
      render();
    }, { history: 200 });
  } catch (e) {
    byId('decisions-error').textContent = `decisions stream: ${errText(e)}`;
  }
}
