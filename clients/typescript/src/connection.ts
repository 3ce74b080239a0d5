// One logical connection to the gateway that outlives its sockets: JSON-RPC calls
// matched by id, authentication on every (re)connect, reconnect with exponential
// backoff and full jitter, and calls that are safe to repeat carried over a reconnect.
//
// Safe to repeat: a read (see READ_METHODS) or a call carrying an idempotency key (the
// gateway executes a key once; docs/gateway.md "Retrying a mutating call"). Any other
// call pending when the socket drops rejects with `ConnectionClosed` (ERR-012: the
// gateway cancelled it, or not — the client cannot know). A rate-limited call was not
// run, so it is repeated after `retry_after_ms`.

import { authParams, type ClientMetadata, type Credentials } from './auth.js';
import { CallTimeout, ConnectionClosed, errorFromClose, errorFromRpc, GatewayError, RateLimited, Unauthorized, type RpcErrorObject } from './errors.js';
import { frameText, OPEN, socketConstructor, type SocketConstructor, type SocketLike } from './socket.js';
import type { AuthAuthenticateResult } from './generated/types.js';

/** Methods that change nothing: repeated after a reconnect. (Checked against `gateway.info` by the tests.) */
export const READ_METHODS: ReadonlySet<string> = new Set([
  'gateway.info', 'gateway.ping', 'gateway.clients', 'gateway.replay', 'config.get',
  'cxp.status', 'volk.list', 'volk.get', 'workflow.get', 'agents.escalations',
  'session.list', 'session.get', 'session.portfolio.stats', 'governance.query',
  'governance.evaluate', 'governance.rules', 'knowledge.nodes', 'knowledge.relationships',
  'knowledge.query',
]);

/** Connection states reported to `onStatus`. */
export type Status = 'connecting' | 'open' | 'reconnecting' | 'auth_failed' | 'closed';

/** Backoff between reconnect attempts: `min(maxDelayMs, minDelayMs * 2^n)`, times a random factor in `[1 - jitter, 1]`. */
export interface ReconnectOptions {
  minDelayMs?: number;
  maxDelayMs?: number;
  jitter?: number;
}

export interface ConnectionOptions {
  credentials: Credentials;
  clientMetadata?: ClientMetadata;
  WebSocket?: SocketConstructor;
  /** Per-call deadline, reconnects included (default 30 s). */
  callTimeoutMs?: number;
  /** `false`: never reconnect. */
  reconnect?: ReconnectOptions | false;
  onStatus?: (status: Status, detail?: string) => void;
}

interface Pending {
  method: string;
  params: unknown;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
  retrySafe: boolean;
  timer: ReturnType<typeof setTimeout> | null;
  rateRetries: number;
}

type Notify = (method: string, params: Record<string, unknown>) => void;
type Hook = () => Promise<void>;

export class Connection {
  readonly url: string;
  private readonly opts: ConnectionOptions;
  private ws: SocketLike | null = null;
  private authed = false;
  private nextId = 1;
  private readonly inFlight = new Map<number, Pending>();
  private waiting: Pending[] = [];
  private attempt = 0;
  private stopped = false;
  private timer: ReturnType<typeof setTimeout> | null = null;
  /** The answer to the last `auth.authenticate`. */
  auth: AuthAuthenticateResult | null = null;
  /** Counters for tests and dashboards. */
  readonly stats = { connects: 0, reconnects: 0, retried: 0 };
  notify: Notify = () => {};
  /** Run after each re-authentication, before queued calls go out (resubscribe). */
  onReconnect: Hook = async () => {};

  constructor(url: string, opts: ConnectionOptions) {
    this.url = url;
    this.opts = opts;
  }

  /** Opens the first socket and authenticates; rejects when either fails. */
  async open(): Promise<AuthAuthenticateResult> {
    await this.dial();
    return this.auth as AuthAuthenticateResult;
  }

  /** Calls `method`; see the file comment for what is repeated after a reconnect. */
  call(method: string, params: unknown, retrySafe: boolean, timeoutMs?: number): Promise<unknown> {
    if (this.stopped) return Promise.reject(new ConnectionClosed(1000, 'connection closed', { reason: 'closed' }));
    return new Promise((resolve, reject) => {
      const p: Pending = { method, params, resolve, reject, retrySafe, timer: null, rateRetries: 0 };
      const ms = timeoutMs ?? this.opts.callTimeoutMs ?? 30_000;
      p.timer = setTimeout(() => this.expire(p, ms), ms);
      if (this.ws && this.authed && this.ws.readyState === OPEN) this.send(p);
      else this.waiting.push(p);
    });
  }

  /** Calls still unanswered (sent or waiting for a socket). */
  get pendingCount(): number {
    return this.inFlight.size + this.waiting.length;
  }

  /** Closes for good; pending calls reject with `ConnectionClosed`. */
  close(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    const ws = this.ws;
    this.ws = null;
    this.failAll(new ConnectionClosed(1000, 'connection closed', { reason: 'closed' }), false);
    if (ws) ws.close(1000, 'client closed');
    this.status('closed');
  }

  // --- sockets --------------------------------------------------------------------

  private async dial(): Promise<void> {
    const Ctor = await socketConstructor(this.opts.WebSocket);
    this.status(this.stats.connects ? 'reconnecting' : 'connecting');
    const ws = new Ctor(this.url);
    this.ws = ws;
    this.authed = false;
    await new Promise<void>((resolve, reject) => {
      ws.onopen = () => resolve();
      ws.onerror = () => {};
      ws.onclose = (e) => reject(errorFromClose(e.code, e.reason));
    });
    ws.onmessage = (m) => this.frame(frameText(m.data));
    ws.onclose = (e) => this.dropped(ws, e.code, e.reason);
    const params = await authParams(this.opts.credentials, this.opts.clientMetadata ?? {});
    this.auth = (await this.rawCall(ws, 'auth.authenticate', params)) as AuthAuthenticateResult;
    const again = this.stats.connects > 0;
    this.stats.connects += 1;
    if (again) {
      this.stats.reconnects += 1;
      await this.onReconnect();
    }
    // Open for calls only now: a socket lost before this point fails `dial` (its caller
    // retries), one lost after is `dropped`'s to handle.
    if (this.ws !== ws || ws.readyState !== OPEN) throw errorFromClose(1006, 'lost while resubscribing');
    this.authed = true;
    this.attempt = 0;
    this.status('open', this.auth.scope);
    const queued = this.waiting;
    this.waiting = [];
    for (const p of queued) this.send(p);
  }

  /** A call on `ws` outside the queue (authentication, resubscription). */
  rawCall(ws: SocketLike | null, method: string, params: unknown): Promise<unknown> {
    const sock = ws ?? this.ws;
    if (!sock || sock.readyState !== OPEN) return Promise.reject(new ConnectionClosed(1006, 'not connected', { reason: 'not_connected' }));
    return new Promise((resolve, reject) => {
      const p: Pending = { method, params, resolve, reject, retrySafe: false, timer: null, rateRetries: 0 };
      this.transmit(sock, p);
    });
  }

  private send(p: Pending): void {
    const ws = this.ws;
    if (!ws || !this.authed || ws.readyState !== OPEN) {
      this.waiting.push(p);
      return;
    }
    this.transmit(ws, p);
  }

  private transmit(ws: SocketLike, p: Pending): void {
    const id = this.nextId++;
    this.inFlight.set(id, p);
    ws.send(JSON.stringify({ jsonrpc: '2.0', id, method: p.method, params: p.params }));
  }

  /** Handles one text frame (answers and notifications); the socket calls it. */
  frame(text: string): void {
    let msg: unknown;
    try {
      msg = JSON.parse(text);
    } catch {
      return;
    }
    for (const m of (Array.isArray(msg) ? msg : [msg]) as Array<Record<string, unknown>>) {
      if (m.id !== undefined && m.id !== null) this.answer(m);
      else if (typeof m.method === 'string' && m.params && typeof m.params === 'object') {
        this.notify(m.method, m.params as Record<string, unknown>);
      }
    }
  }

  private answer(m: Record<string, unknown>): void {
    const id = m.id as number;
    const p = this.inFlight.get(id);
    if (!p) return;
    this.inFlight.delete(id);
    if (!m.error) return this.settle(p, m.result, null);
    const err = errorFromRpc(m.error as RpcErrorObject);
    if (err instanceof RateLimited && p.rateRetries < 20 && p.timer) {
      p.rateRetries += 1;
      setTimeout(() => this.send(p), Math.max(1, err.retryAfterMs));
      return;
    }
    this.settle(p, undefined, err);
  }

  private settle(p: Pending, value: unknown, err: GatewayError | null): void {
    if (p.timer) clearTimeout(p.timer);
    p.timer = null;
    if (err) p.reject(err);
    else p.resolve(value);
  }

  private expire(p: Pending, ms: number): void {
    p.timer = null;
    this.waiting = this.waiting.filter((w) => w !== p);
    for (const [id, q] of this.inFlight) if (q === p) this.inFlight.delete(id);
    p.reject(new CallTimeout(-32603, `${p.method}: no answer within ${ms} ms`, { reason: 'call_timeout', method: p.method }));
  }

  private dropped(ws: SocketLike, code: number, reason: string): void {
    if (this.ws !== ws) return;
    const wasOpen = this.authed;
    this.ws = null;
    this.authed = false;
    this.failAll(errorFromClose(code, reason), true);
    // A socket lost while authenticating: `dial` fails and its caller decides.
    if (!wasOpen) return;
    if (this.stopped || this.opts.reconnect === false) {
      this.stopped = true;
      this.failAll(errorFromClose(code, reason), false);
      this.status('closed', `${code} ${reason}`.trim());
      return;
    }
    this.schedule(`${code} ${reason}`.trim());
  }

  /** Rejects what cannot be repeated; with `keepSafe` the rest waits for the next socket. */
  private failAll(err: GatewayError, keepSafe: boolean): void {
    const all = [...this.inFlight.values(), ...this.waiting];
    this.inFlight.clear();
    this.waiting = [];
    for (const p of all) {
      if (keepSafe && p.retrySafe) {
        this.stats.retried += 1;
        this.waiting.push(p);
      } else {
        this.settle(p, undefined, err);
      }
    }
  }

  private schedule(detail: string): void {
    this.status('reconnecting', detail);
    const r = this.opts.reconnect || {};
    const min = r.minDelayMs ?? 100;
    const max = r.maxDelayMs ?? 5_000;
    const jitter = r.jitter ?? 0.5;
    const base = Math.min(max, min * 2 ** Math.min(this.attempt, 20));
    this.attempt += 1;
    const delay = base * (1 - jitter * Math.random());
    this.timer = setTimeout(() => this.redial(), delay);
  }

  private async redial(): Promise<void> {
    if (this.stopped) return;
    try {
      await this.dial();
    } catch (e) {
      if (e instanceof Unauthorized) {
        this.stopped = true;
        this.status('auth_failed', e.reason ?? e.message);
        this.failAll(e, false);
        this.ws?.close(1000, 'auth failed');
        return;
      }
      const ws = this.ws;
      if (ws && ws.readyState === OPEN) ws.close(1000, 'retry');
      this.ws = null;
      if (!this.stopped) this.schedule(e instanceof Error ? e.message : String(e));
    }
  }

  private status(s: Status, detail?: string): void {
    this.opts.onStatus?.(s, detail);
  }
}
