// Small DOM helpers shared by the panels: element builder, time formatting, glob
// matching, a frame-batched renderer and an SVG sparkline. No framework, no build step.

/** Builds an element: h('td', {class: 'x', onclick: fn}, 'text', child). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** The element with id `id` (throws a clear error if the page lacks it). */
export function byId(id) {
  const el = document.getElementById(id);
  if (!el) throw new Error(`console page has no element #${id}`);
  return el;
}

/** `HH:MM:SS.mmm` of an RFC 3339 timestamp, or the input when it does not parse. */
export function clock(ts) {
  const d = new Date(ts);
  if (Number.isNaN(d.getTime())) return String(ts ?? '');
  return d.toISOString().slice(11, 23);
}

/** "3 s ago" style age of a timestamp. */
export function age(ts) {
  const d = new Date(ts);
  if (!ts || Number.isNaN(d.getTime())) return '—';
  const s = Math.max(0, Math.round((Date.now() - d.getTime()) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  return `${Math.round(s / 3600)} h ago`;
}

/** A case-insensitive matcher for a glob (`*`, `?`, `[ab]`), as the gateway's filters. */
export function glob(pattern) {
  if (!pattern) return () => true;
  let re = '';
  for (const ch of pattern) {
    if (ch === '*') re += '.*';
    else if (ch === '?') re += '.';
    else if (ch === '[' || ch === ']') re += ch;
    else re += ch.replace(/[.+^${}()|\\/-]/g, '\\$&');
  }
  let rx;
  try { rx = new RegExp(`^${re}$`, 'i'); } catch { rx = null; }
  return (s) => (rx ? rx.test(String(s ?? '')) : String(s ?? '').includes(pattern));
}

/**
 * Coalesces many "something changed" calls into one render per animation frame, so a
 * burst of 1,000 events/s costs at most one DOM update per frame.
 */
export function frameBatched(render) {
  let queued = false;
  return () => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => { queued = false; render(); });
  };
}

/** Draws `values` as a polyline filling an SVG element of the given size. */
export function sparkline(svg, values, width = 240, height = 40) {
  const max = Math.max(1, ...values);
  const step = values.length > 1 ? width / (values.length - 1) : width;
  const pts = values.map((v, i) => `${(i * step).toFixed(1)},${(height - (v / max) * (height - 2) - 1).toFixed(1)}`);
  svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
  svg.dataset.max = String(Math.max(0, ...values)); // the peak shown, for tests and tooltips
  svg.setAttribute('title', `peak ${svg.dataset.max}/s over the last ${values.length} s`);
  svg.innerHTML = `<polyline fill="none" stroke="currentColor" stroke-width="1.5" points="${pts.join(' ')}"/>`;
}

/** Short human text of an RPC error (code, reason, message). */
export function errText(e) {
  if (!e) return '';
  const reason = e.data?.reason ? ` ${e.data.reason}` : '';
  const field = e.data?.field ? ` (${e.data.field})` : '';
  const detail = e.data?.detail || e.message;
  return e.code ? `${e.code}${reason}${field}: ${detail}` : String(e.message || e);
}

/** Pretty JSON for <pre> blocks. */
export function pretty(v) {
  return JSON.stringify(v, null, 2);
}
