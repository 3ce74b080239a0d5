// The client's front: `Gateway.connect(url, {token})`, every method as a typed async
// function (`gw.cxp.send(...)`, generated from the schemas), resumable subscriptions,
// the agent loop (`gw.volk("U:Vz").inbox()`), and `drain()`.

import { randomId, type ClientMetadata } from './auth.js';
import { Connection, READ_METHODS, type ReconnectOptions, type Status } from './connection.js';
import { ConnectionClosed, type GapNotice } from './errors.js';
import { bindNamespaces, IDEMPOTENT_METHODS, type CallOptions, type MethodMap, type MethodName, type Namespaces } from './generated/methods.js';
import type { AuthAuthenticateResult, GatewayEvent, GatewaySubscribeParams, GatewaySubscribeResult } from './generated/types.js';
import type { SocketConstructor } from './socket.js';
import { Subscription, type Filters, type SubscribeOptions, type SubscriptionHost, type Topic } from './subscription.js';
import { Volk, type VolkOptions } from './volk.js';

export interface GatewayOptions {
  /** The operator's or a `gateway.tokens` token. */
  token?: string;
  /** An HMAC client of `gateway.hmac.clients`. */
  hmac?: { clientId: string; secret: string };
  clientMetadata?: ClientMetadata;
  /** A WebSocket constructor (default: the global one, else the `ws` package). */
  WebSocket?: SocketConstructor;
  /** Per-call deadline in ms, reconnects included (default 30000). */
  callTimeoutMs?: number;
  /** Reconnect backoff, or `false` to never reconnect. */
  reconnect?: ReconnectOptions | false;
  onStatus?: (status: Status, detail?: string) => void;
  /** Ranges a subscription could not replay (retention, a recreated log). */
  onLoss?: (topic: string, from: number, to: number | null, why: string) => void;
}

/** `gw.volk("U:Vz")` is the agent loop of a Volk; `gw.volk.list()`, `gw.volk.get()`... the `volk.*` methods. */
export type VolkNamespace = ((alias: string, opts?: VolkOptions) => Volk) & Namespaces['volk'];

export interface Gateway extends Omit<Namespaces, 'volk'> {}

export class Gateway implements SubscriptionHost {
  private readonly conn: Connection;
  private readonly opts: GatewayOptions;
  private readonly subs = new Map<string, Subscription>();
  private readonly volks = new Set<Volk>();
  private draining = false;
  /** The agent loop of Volk `alias` (`for await (const packet of gw.volk(alias).inbox())`), and the `volk.*` methods. */
  readonly volk: VolkNamespace;

  private constructor(url: string, opts: GatewayOptions) {
    const credentials = opts.token !== undefined ? { token: opts.token } : opts.hmac ? { hmac: opts.hmac } : null;
    if (!credentials) throw new TypeError('Gateway.connect needs {token} or {hmac: {clientId, secret}}');
    this.opts = opts;
    this.conn = new Connection(url, {
      credentials,
      clientMetadata: opts.clientMetadata ?? { client_name: '@orchestrata/client', client_version: '0.1.0' },
      WebSocket: opts.WebSocket,
      callTimeoutMs: opts.callTimeoutMs,
      reconnect: opts.reconnect,
      onStatus: opts.onStatus,
    });
    this.conn.notify = (method, params) => this.notification(method, params);
    this.conn.onReconnect = () => this.resubscribe();
    const ns = bindNamespaces((m, p, o) => this.call(m, p, o));
    Object.assign(this, ns);
    this.volk = Object.assign((alias: string, o: VolkOptions = {}) => this.makeVolk(alias, o), ns.volk);
  }

  /** Connects and authenticates; rejects with the gateway's error (`InvalidCredentials`, ...). */
  static async connect(url: string, opts: GatewayOptions): Promise<Gateway> {
    const gw = new Gateway(url, opts);
    await gw.conn.open();
    return gw;
  }

  /** What `auth.authenticate` answered last (scope, client id, capabilities). */
  get authInfo(): AuthAuthenticateResult {
    return this.conn.auth as AuthAuthenticateResult;
  }

  /** The connection underneath (its `frame` takes a text frame as if the gateway sent it). */
  get connection(): Connection {
    return this.conn;
  }

  /** Reconnect counters. */
  get stats(): { connects: number; reconnects: number; retried: number } {
    return this.conn.stats;
  }

  /**
   * Calls `method`. Methods that take an `idempotency_key` get one (a fresh UUID unless
   * `options.idempotencyKey` names it), so the call is repeated after a reconnect and
   * executed once; reads are repeated too; anything else rejects with `ConnectionClosed`
   * when the connection drops before the answer.
   */
  call<M extends MethodName>(method: M, params?: MethodMap[M]['params'], options: CallOptions = {}): Promise<MethodMap[M]['result']> {
    let p = (params ?? {}) as Record<string, unknown>;
    const keyed = IDEMPOTENT_METHODS.has(method);
    if (keyed && p.idempotency_key === undefined) p = { ...p, idempotency_key: options.idempotencyKey ?? randomId() };
    const safe = keyed || READ_METHODS.has(method);
    return this.conn.call(method, p, safe, options.timeoutMs) as Promise<MethodMap[M]['result']>;
  }

  /**
   * Subscribes to `topic`; iterate it with `for await`. One live subscription per topic
   * and connection (the gateway's notifications name the topic, not the subscription).
   */
  async subscribe(topic: Topic, opts: SubscribeOptions = {}): Promise<Subscription> {
    if (this.draining) throw new ConnectionClosed(1000, 'draining', { reason: 'draining' });
    if (this.subs.has(topic)) throw new Error(`already subscribed to ${topic} on this connection; open another Gateway for a second filter`);
    const sub = new Subscription(this, topic, { onLoss: this.opts.onLoss, ...opts });
    this.subs.set(topic, sub);
    try {
      await sub.start();
    } catch (e) {
      this.subs.delete(topic);
      throw e;
    }
    return sub;
  }

  private makeVolk(alias: string, opts: VolkOptions): Volk {
    const v = new Volk(this, alias, opts, () => this.volks.delete(v));
    this.volks.add(v);
    return v;
  }

  /**
   * Shuts down gracefully: inboxes stop after the packet in hand, subscriptions end,
   * pending calls are answered, then the socket closes.
   */
  async drain(): Promise<void> {
    this.draining = true;
    await Promise.all([...this.volks].map((v) => v.stop()));
    await Promise.all([...this.subs.values()].map((s) => s.close()));
    while (this.conn.pendingCount > 0) await new Promise((r) => setTimeout(r, 10));
    this.conn.close();
  }

  /** Closes at once; pending calls reject with `ConnectionClosed`. */
  close(): void {
    for (const s of [...this.subs.values()]) void s.close();
    this.conn.close();
  }

  // --- SubscriptionHost -----------------------------------------------------------

  /** @internal */
  subscribeRaw(params: GatewaySubscribeParams): Promise<GatewaySubscribeResult> {
    return this.conn.rawCall(null, 'gateway.subscribe', params) as Promise<GatewaySubscribeResult>;
  }

  /** @internal */
  async unsubscribeRaw(id: string): Promise<void> {
    await this.conn.call('gateway.unsubscribe', { subscription_id: id }, false, 5_000);
  }

  /** @internal */
  async replayRange(topic: string, from: number, to: number, filters?: Filters): Promise<GatewayEvent[]> {
    const params: Record<string, unknown> = { topic, sequence_from: from, sequence_to: to };
    if (filters) params.filters = filters;
    const r = await this.call('gateway.replay', params as MethodMap['gateway.replay']['params']);
    return r.events as unknown as GatewayEvent[];
  }

  /** @internal */
  forget(sub: Subscription): void {
    if (this.subs.get(sub.topic) === sub) this.subs.delete(sub.topic);
  }

  private async resubscribe(): Promise<void> {
    for (const sub of this.subs.values()) await sub.start();
  }

  private notification(method: string, params: Record<string, unknown>): void {
    if (method === 'gateway.gap') {
      this.subs.get(String(params.topic))?.gap(params as unknown as GapNotice);
      return;
    }
    const topic = typeof params.topic === 'string' ? params.topic : method;
    this.subs.get(topic)?.push(params as unknown as GatewayEvent);
  }
}
