// The console's JSON-RPC client for the gateway's WebSocket (docs/gateway.md).
//
// - One socket; `call(method, params)` returns a Promise of the result or rejects with
//   an RpcError carrying the gateway's code and data.reason.
// - `follow(topic, handler, {history})` loads the topic's last `history` events with
//   gateway.replay, then subscribes with `since: {epoch, sequence}` of the last one, so
//   the table is complete from the first frame (no gap between history and live).
// - After a dropped connection it reconnects with backoff, re-authenticates and
//   re-subscribes every followed topic from the last (epoch, sequence) it processed:
//   the gateway replays what was missed from the log. Events at or below that sequence
//   are dropped (counted in `stats.duplicatesDropped`), so a resume never shows a row
//   twice. A sequence that skips ahead is reported to `onGap(topic, from, to)`.

/** A JSON-RPC error answered by the gateway (or a lost connection). */
export class RpcError extends Error {
  constructor({ code, message, data }) {
    super(message || 'error');
    this.code = code;
    this.data = data || {};
  }
  get reason() { return this.data.reason; }
}

const RECONNECT_MIN_MS = 200;
const RECONNECT_MAX_MS = 3000;

export class Gateway {
  /**
   * @param {object} o
   * @param {string} o.url        ws://host:port/
   * @param {string} o.token      the gateway token
   * @param {(s: string, detail?: string) => void} [o.onStatus]  connecting/open/reconnecting/auth_failed/closed
   * @param {(topic: string, from: number, to: number, fillable: boolean) => void} [o.onGap]
   * @param {(topic: string, epoch: string) => void} [o.onReset]  the log was recreated
   */
  constructor({ url, token, onStatus, onGap, onReset }) {
    this.url = url;
    this.token = token;
    this.onStatus = onStatus || (() => {});
    this.onGap = onGap || (() => {});
    this.onReset = onReset || (() => {});
    this.nextId = 1;
    this.pending = new Map();
    this.subs = new Map(); // topic -> {topic, handlers: Set, epoch, last, id}
    this.ws = null;
    this.closed = false;
    this.auth = null;
    this.backoff = RECONNECT_MIN_MS;
    this.stats = { connects: 0, reconnects: 0, duplicatesDropped: 0, events: 0, gaps: 0 };
    this.eventListeners = new Set();
  }

  /** Connects and authenticates; resolves with the auth.authenticate result. */
  start() {
    return new Promise((resolve, reject) => {
      this.firstAuth = { resolve, reject };
      this.connect();
    });
  }

  /** Closes the socket for good (sign-out). */
  close() {
    this.closed = true;
    if (this.ws) this.ws.close(1000, 'sign out');
  }

  /** Calls `method`; rejects with RpcError. */
  call(method, params = {}) {
    const ws = this.ws;
    if (!ws || ws.readyState !== WebSocket.OPEN) {
      return Promise.reject(new RpcError({ code: -32603, message: 'not connected', data: { reason: 'not_connected' } }));
    }
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, method });
      ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    });
  }

  /** Listens to every processed event of every topic (after dedupe). */
  onEvent(fn) { this.eventListeners.add(fn); return () => this.eventListeners.delete(fn); }

  /**
   * Follows `topic`: replays its last `history` events into `handler`, then subscribes
   * from there; survives reconnects. A second follow of the same topic shares the
   * subscription.
   */
  async follow(topic, handler, { history = 0 } = {}) {
    const existing = this.subs.get(topic);
    if (existing) { existing.handlers.add(handler); return existing; }
    const sub = { topic, handlers: new Set([handler]), epoch: null, last: null, id: null };
    if (history > 0) {
      const r = await this.call('gateway.replay', { topic, count: history });
      sub.epoch = r.epoch ?? null;
      for (const ev of r.events || []) this.deliver(sub, ev, { history: true });
      const newest = r.buffer_range?.newest_sequence;
      if (newest !== null && newest !== undefined) sub.last = Math.max(sub.last ?? -1, newest);
    }
    this.subs.set(topic, sub);
    try {
      await this.subscribe(sub);
    } catch (e) {
      this.subs.delete(topic);
      throw e;
    }
    return sub;
  }

  /** Replays `from..=to` of `topic` into its handlers (the "fill" of a gap notice). */
  async fill(topic, from, to) {
    const sub = this.subs.get(topic);
    const r = await this.call('gateway.replay', { topic, sequence_from: from, sequence_to: to });
    for (const ev of r.events || []) {
      if (sub) for (const h of sub.handlers) h(ev, { fill: true });
      for (const l of this.eventListeners) l(ev, { fill: true });
    }
    return r.events?.length || 0;
  }

  // --- internals -------------------------------------------------------------------

  connect() {
    if (this.closed) return;
    this.onStatus(this.stats.connects ? 'reconnecting' : 'connecting');
    let ws;
    try {
      ws = new WebSocket(this.url);
    } catch (e) {
      this.scheduleReconnect(String(e));
      return;
    }
    this.ws = ws;
    ws.onopen = () => this.opened(ws);
    ws.onmessage = (m) => this.frame(m.data);
    ws.onclose = (e) => this.dropped(ws, e);
    ws.onerror = () => {};
  }

  async opened(ws) {
    try {
      const auth = await this.call('auth.authenticate', {
        strategy: 'static_token',
        token: this.token,
        client_metadata: { client_name: 'orchestrata-console', client_version: '1', purpose: 'dashboard' },
      });
      this.auth = auth;
      const again = this.stats.connects > 0;
      this.stats.connects += 1;
      if (again) this.stats.reconnects += 1;
      this.backoff = RECONNECT_MIN_MS;
      for (const sub of this.subs.values()) {
        try { await this.subscribe(sub); } catch (e) { this.onStatus('error', `${sub.topic}: ${e.message}`); }
      }
      if (this.ws !== ws) return;
      this.onStatus('open', auth.scope);
      if (this.firstAuth) { this.firstAuth.resolve(auth); this.firstAuth = null; }
    } catch (e) {
      if (e instanceof RpcError && e.code === -32001) {
        this.closed = true;
        this.onStatus('auth_failed', e.reason || e.message);
        if (this.firstAuth) { this.firstAuth.reject(e); this.firstAuth = null; }
        ws.close(1000, 'auth failed');
      }
    }
  }

  async subscribe(sub) {
    const params = { topic: sub.topic };
    if (sub.epoch !== null && sub.last !== null) params.since = { epoch: sub.epoch, sequence: sub.last };
    let r;
    try {
      r = await this.call('gateway.subscribe', params);
    } catch (e) {
      if (e.reason === 'epoch_mismatch') {
        // The log was recreated: positions are void; start over from the live tail.
        sub.epoch = e.data.epoch ?? null;
        sub.last = null;
        this.onReset(sub.topic, sub.epoch);
        r = await this.call('gateway.subscribe', { topic: sub.topic });
      } else if (e.reason === 'position_truncated') {
        const first = e.data.first_sequence;
        this.stats.gaps += 1;
        this.onGap(sub.topic, sub.last + 1, first - 1, false);
        sub.last = first - 1;
        r = await this.call('gateway.subscribe', { topic: sub.topic, since: { epoch: sub.epoch, sequence: first - 1 } });
      } else {
        throw e;
      }
    }
    sub.id = r.subscription_id;
    sub.epoch = r.epoch ?? sub.epoch;
    return r;
  }

  frame(text) {
    let msg;
    try { msg = JSON.parse(text); } catch { return; }
    for (const m of Array.isArray(msg) ? msg : [msg]) {
      if (m.id !== undefined && m.id !== null) {
        const p = this.pending.get(m.id);
        if (!p) continue;
        this.pending.delete(m.id);
        if (m.error) p.reject(new RpcError(m.error));
        else p.resolve(m.result);
      } else if (m.method === 'gateway.gap' && m.params) {
        // The gateway dropped events it could not queue for us (a slow consumer); it
        // says which range, before any newer event of that subscription.
        const g = m.params;
        const sub = this.subs.get(g.topic);
        if (sub && (sub.last === null || g.sequence_to > sub.last)) sub.last = g.sequence_to;
        this.stats.gaps += 1;
        this.onGap(g.topic, g.sequence_from, g.sequence_to, true);
      } else if (m.method && m.params && m.params.topic) {
        const sub = this.subs.get(m.params.topic);
        if (sub) this.deliver(sub, m.params);
      }
    }
  }

  deliver(sub, ev, meta = {}) {
    const seq = ev.sequence;
    if (sub.last !== null && sub.epoch === ev.epoch && seq <= sub.last) {
      this.stats.duplicatesDropped += 1;
      return;
    }
    if (sub.last !== null && sub.epoch === ev.epoch && seq > sub.last + 1) {
      this.stats.gaps += 1;
      this.onGap(sub.topic, sub.last + 1, seq - 1, true);
    }
    sub.last = seq;
    sub.epoch = ev.epoch ?? sub.epoch;
    this.stats.events += 1;
    for (const h of sub.handlers) h(ev, meta);
    for (const l of this.eventListeners) l(ev, meta);
  }

  dropped(ws, e) {
    if (this.ws !== ws) return;
    for (const p of this.pending.values()) {
      p.reject(new RpcError({ code: -32603, message: 'connection lost', data: { reason: 'connection_lost' } }));
    }
    this.pending.clear();
    if (this.closed) { this.onStatus('closed', e.reason); return; }
    this.scheduleReconnect(`${e.code} ${e.reason || ''}`.trim());
  }

  scheduleReconnect(detail) {
    this.onStatus('reconnecting', detail);
    const wait = this.backoff;
    this.backoff = Math.min(RECONNECT_MAX_MS, this.backoff * 2);
    setTimeout(() => this.connect(), wait);
  }
}
