// The console's view of the gateway, on the TypeScript client package
// (clients/typescript, served as /console/client/*.js; docs/clients.md).
//
// The package does the work: one socket, JSON-RPC calls with typed errors (the error's
// `code`, `reason` and `data`), reconnect with backoff and jitter, re-authentication,
// and subscriptions that resume from the last (epoch, sequence) processed without a
// gap or a duplicate. This file adds what a dashboard wants on top:
//
// - `follow(topic, handler, {history})` loads the topic's last `history` events with
//   gateway.replay, then subscribes from the newest of them, so a table is complete
//   from the first frame; several handlers of one topic share the subscription.
// - A `gateway.gap` notice is not filled behind the operator's back: it goes to
//   `onGap(topic, from, to, fillable)`, whose notice offers `fill(topic, from, to)`.

import { Gateway as Client, GatewayError } from './client/index.js';

/** A JSON-RPC error answered by the gateway (or a lost connection). */
export const RpcError = GatewayError;

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
    this.client = null;
    this.subs = new Map(); // topic -> Subscription of the package (id, epoch, position, stats)
    this.handlers = new Map(); // topic -> Set of handlers
    this.eventListeners = new Set();
    this.lossCount = 0;
  }

  /** Connects and authenticates; resolves with the auth.authenticate result. */
  async start() {
    try {
      this.client = await this.connect();
    } catch (e) {
      this.onStatus(e.code === -32001 ? 'auth_failed' : 'closed', e.reason || e.message);
      throw e;
    }
    return this.client.authInfo;
  }

  connect() {
    return Client.connect(this.url, {
      token: this.token,
      clientMetadata: { client_name: 'orchestrata-console', client_version: '1', purpose: 'dashboard' },
      reconnect: { minDelayMs: 200, maxDelayMs: 3000 },
      onStatus: (s, detail) => this.onStatus(s, detail),
      onLoss: (topic, from, to, why) => {
        this.lossCount += 1;
        if (why === 'position_truncated') this.onGap(topic, from, to, false);
        else this.onReset(topic, this.subs.get(topic)?.epoch ?? null);
      },
    });
  }

  /** What the gateway answered to the last authentication. */
  get auth() {
    return this.client?.authInfo ?? null;
  }

  /** Counters for the gateway panel and the e2e test. */
  get stats() {
    const s = { connects: 0, reconnects: 0, duplicatesDropped: 0, events: 0, gaps: this.lossCount };
    if (this.client) Object.assign(s, { connects: this.client.stats.connects, reconnects: this.client.stats.reconnects });
    for (const sub of this.subs.values()) {
      s.duplicatesDropped += sub.stats.duplicatesDropped;
      s.events += sub.stats.events;
    }
    return s;
  }

  /** Closes the socket for good (sign-out). */
  close() {
    this.client?.close();
  }

  /** Calls `method`; rejects with the package's error classes (code, reason, data). */
  call(method, params = {}) {
    return this.client.call(method, params);
  }

  /** Takes a text frame as if the gateway sent it (the e2e test feeds load and gaps). */
  frame(text) {
    this.client.connection.frame(text);
  }

  /** Listens to every processed event of every topic. */
  onEvent(fn) { this.eventListeners.add(fn); return () => this.eventListeners.delete(fn); }

  /** Follows `topic`: its last `history` events, then live; survives reconnects. */
  async follow(topic, handler, { history = 0 } = {}) {
    const handlers = this.handlers.get(topic);
    if (handlers) { handlers.add(handler); return this.subs.get(topic); }
    this.handlers.set(topic, new Set([handler]));
    let since = null;
    if (history > 0) {
      const r = await this.call('gateway.replay', { topic, count: history });
      for (const ev of r.events || []) this.deliver(topic, ev, { history: true });
      const newest = r.buffer_range?.newest_sequence;
      if (r.epoch && newest !== null && newest !== undefined) since = { epoch: r.epoch, sequence: newest };
    }
    let sub;
    try {
      sub = await this.client.subscribe(topic, {
        since,
        fillGaps: false,
        onGap: (g) => this.onGap(g.topic, g.sequence_from, g.sequence_to, true),
      });
    } catch (e) {
      this.handlers.delete(topic);
      throw e;
    }
    this.subs.set(topic, sub);
    (async () => { for await (const ev of sub) this.deliver(topic, ev, {}); })();
    return sub;
  }

  /** Replays `from..=to` of `topic` into its handlers (the "fill" of a gap notice). */
  async fill(topic, from, to) {
    const r = await this.call('gateway.replay', { topic, sequence_from: from, sequence_to: to });
    for (const ev of r.events || []) this.deliver(topic, ev, { fill: true });
    return r.events?.length || 0;
  }

  deliver(topic, ev, meta) {
    for (const h of this.handlers.get(topic) || []) h(ev, meta);
    for (const l of this.eventListeners) l(ev, meta);
  }
}
