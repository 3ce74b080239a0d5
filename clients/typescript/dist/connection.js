// One logical connection to the gateway that outlives its sockets: JSON-RPC calls
// matched by id, authentication on every (re)connect, reconnect with exponential
// backoff and full jitter, and calls that are safe to repeat carried over a reconnect.
//
// Safe to repeat: a read (see READ_METHODS) or a call carrying an idempotency key (the
// gateway executes a key once; docs/gateway.md "Retrying a mutating call"). Any other
// call pending when the socket drops rejects with `ConnectionClosed` (ERR-012: the
// gateway cancelled it, or not — the client cannot know). A rate-limited call was not
// run, so it is repeated after `retry_after_ms`.
import { authParams } from './auth.js';
import { CallTimeout, ConnectionClosed, errorFromClose, errorFromRpc, RateLimited, Unauthorized } from './errors.js';
import { frameText, OPEN, socketConstructor } from './socket.js';
/** Methods that change nothing: repeated after a reconnect. (Checked against `gateway.info` by the tests.) */
export const READ_METHODS = new Set([
    'gateway.info', 'gateway.ping', 'gateway.clients', 'gateway.replay', 'config.get',
    'cxp.status', 'volk.list', 'volk.get', 'workflow.get', 'agents.escalations',
    'session.list', 'session.get', 'session.portfolio.stats', 'governance.query',
    'governance.evaluate', 'governance.rules', 'knowledge.nodes', 'knowledge.relationships',
    'knowledge.query',
]);
export class Connection {
    url;
    opts;
    ws = null;
    authed = false;
    nextId = 1;
    inFlight = new Map();
    waiting = [];
    attempt = 0;
    stopped = false;
    timer = null;
    /** The answer to the last `auth.authenticate`. */
    auth = null;
    /** Counters for tests and dashboards. */
    stats = { connects: 0, reconnects: 0, retried: 0 };
    notify = () => { };
    /** Run after each re-authentication, before queued calls go out (resubscribe). */
    onReconnect = async () => { };
    constructor(url, opts) {
        this.url = url;
        this.opts = opts;
    }
    /** Opens the first socket and authenticates; rejects when either fails. */
    async open() {
        await this.dial();
        return this.auth;
    }
    /** Calls `method`; see the file comment for what is repeated after a reconnect. */
    call(method, params, retrySafe, timeoutMs) {
        if (this.stopped)
            return Promise.reject(new ConnectionClosed(1000, 'connection closed', { reason: 'closed' }));
        return new Promise((resolve, reject) => {
            const p = { method, params, resolve, reject, retrySafe, timer: null, rateRetries: 0 };
            const ms = timeoutMs ?? this.opts.callTimeoutMs ?? 30_000;
            p.timer = setTimeout(() => this.expire(p, ms), ms);
            if (this.ws && this.authed && this.ws.readyState === OPEN)
                this.send(p);
            else
                this.waiting.push(p);
        });
    }
    /** Calls still unanswered (sent or waiting for a socket). */
    get pendingCount() {
        return this.inFlight.size + this.waiting.length;
    }
    /** Closes for good; pending calls reject with `ConnectionClosed`. */
    close() {
        this.stopped = true;
        if (this.timer)
            clearTimeout(this.timer);
        const ws = this.ws;
        this.ws = null;
        this.failAll(new ConnectionClosed(1000, 'connection closed', { reason: 'closed' }), false);
        if (ws)
            ws.close(1000, 'client closed');
        this.status('closed');
    }
    // --- sockets --------------------------------------------------------------------
    async dial() {
        const Ctor = await socketConstructor(this.opts.WebSocket);
        this.status(this.stats.connects ? 'reconnecting' : 'connecting');
        const ws = new Ctor(this.url);
        this.ws = ws;
        this.authed = false;
        await new Promise((resolve, reject) => {
            ws.onopen = () => resolve();
            ws.onerror = () => { };
            ws.onclose = (e) => reject(errorFromClose(e.code, e.reason));
        });
        ws.onmessage = (m) => this.frame(frameText(m.data));
        ws.onclose = (e) => this.dropped(ws, e.code, e.reason);
        const params = await authParams(this.opts.credentials, this.opts.clientMetadata ?? {});
        this.auth = (await this.rawCall(ws, 'auth.authenticate', params));
        const again = this.stats.connects > 0;
        this.stats.connects += 1;
        if (again) {
            this.stats.reconnects += 1;
            await this.onReconnect();
        }
        // Open for calls only now: a socket lost before this point fails `dial` (its caller
        // retries), one lost after is `dropped`'s to handle.
        if (this.ws !== ws || ws.readyState !== OPEN)
            throw errorFromClose(1006, 'lost while resubscribing');
        this.authed = true;
        this.attempt = 0;
        this.status('open', this.auth.scope);
        const queued = this.waiting;
        this.waiting = [];
        for (const p of queued)
            this.send(p);
    }
    /** A call on `ws` outside the queue (authentication, resubscription). */
    rawCall(ws, method, params) {
        const sock = ws ?? this.ws;
        if (!sock || sock.readyState !== OPEN)
            return Promise.reject(new ConnectionClosed(1006, 'not connected', { reason: 'not_connected' }));
        return new Promise((resolve, reject) => {
            const p = { method, params, resolve, reject, retrySafe: false, timer: null, rateRetries: 0 };
            this.transmit(sock, p);
        });
    }
    send(p) {
        const ws = this.ws;
        if (!ws || !this.authed || ws.readyState !== OPEN) {
            this.waiting.push(p);
            return;
        }
        this.transmit(ws, p);
    }
    transmit(ws, p) {
        const id = this.nextId++;
        this.inFlight.set(id, p);
        ws.send(JSON.stringify({ jsonrpc: '2.0', id, method: p.method, params: p.params }));
    }
    /** Handles one text frame (answers and notifications); the socket calls it. */
    frame(text) {
        let msg;
        try {
            msg = JSON.parse(text);
        }
        catch {
            return;
        }
        for (const m of (Array.isArray(msg) ? msg : [msg])) {
            if (m.id !== undefined && m.id !== null)
                this.answer(m);
            else if (typeof m.method === 'string' && m.params && typeof m.params === 'object') {
                this.notify(m.method, m.params);
            }
        }
    }
    answer(m) {
        const id = m.id;
        const p = this.inFlight.get(id);
        if (!p)
            return;
        this.inFlight.delete(id);
        if (!m.error)
            return this.settle(p, m.result, null);
        const err = errorFromRpc(m.error);
        if (err instanceof RateLimited && p.rateRetries < 20 && p.timer) {
            p.rateRetries += 1;
            setTimeout(() => this.send(p), Math.max(1, err.retryAfterMs));
            return;
        }
        this.settle(p, undefined, err);
    }
    settle(p, value, err) {
        if (p.timer)
            clearTimeout(p.timer);
        p.timer = null;
        if (err)
            p.reject(err);
        else
            p.resolve(value);
    }
    expire(p, ms) {
        p.timer = null;
        this.waiting = this.waiting.filter((w) => w !== p);
        for (const [id, q] of this.inFlight)
            if (q === p)
                this.inFlight.delete(id);
        p.reject(new CallTimeout(-32603, `${p.method}: no answer within ${ms} ms`, { reason: 'call_timeout', method: p.method }));
    }
    dropped(ws, code, reason) {
        if (this.ws !== ws)
            return;
        const wasOpen = this.authed;
        this.ws = null;
        this.authed = false;
        this.failAll(errorFromClose(code, reason), true);
        // A socket lost while authenticating: `dial` fails and its caller decides.
        if (!wasOpen)
            return;
        if (this.stopped || this.opts.reconnect === false) {
            this.stopped = true;
            this.failAll(errorFromClose(code, reason), false);
            this.status('closed', `${code} ${reason}`.trim());
            return;
        }
        this.schedule(`${code} ${reason}`.trim());
    }
    /** Rejects what cannot be repeated; with `keepSafe` the rest waits for the next socket. */
    failAll(err, keepSafe) {
        const all = [...this.inFlight.values(), ...this.waiting];
        this.inFlight.clear();
        this.waiting = [];
        for (const p of all) {
            if (keepSafe && p.retrySafe) {
                this.stats.retried += 1;
                this.waiting.push(p);
            }
            else {
                this.settle(p, undefined, err);
            }
        }
    }
    schedule(detail) {
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
    async redial() {
        if (this.stopped)
            return;
        try {
            await this.dial();
        }
        catch (e) {
            if (e instanceof Unauthorized) {
                this.stopped = true;
                this.status('auth_failed', e.reason ?? e.message);
                this.failAll(e, false);
                this.ws?.close(1000, 'auth failed');
                return;
            }
            const ws = this.ws;
            if (ws && ws.readyState === OPEN)
                ws.close(1000, 'retry');
            this.ws = null;
            if (!this.stopped)
                this.schedule(e instanceof Error ? e.message : String(e));
        }
    }
    status(s, detail) {
        this.opts.onStatus?.(s, detail);
    }
}
