// The client's front: `Gateway.connect(url, {token})`, every method as a typed async
// function (`gw.cxp.send(...)`, generated from the schemas), resumable subscriptions,
// the agent loop (`gw.volk("U:Vz").inbox()`), and `drain()`.
import { randomId } from './auth.js';
import { Connection, READ_METHODS } from './connection.js';
import { ConnectionClosed } from './errors.js';
import { bindNamespaces, IDEMPOTENT_METHODS } from './generated/methods.js';
import { Subscription } from './subscription.js';
import { Volk } from './volk.js';
export class Gateway {
    conn;
    opts;
    subs = new Map();
    volks = new Set();
    draining = false;
    /** The agent loop of Volk `alias` (`for await (const packet of gw.volk(alias).inbox())`), and the `volk.*` methods. */
    volk;
    constructor(url, opts) {
        const credentials = opts.token !== undefined ? { token: opts.token } : opts.hmac ? { hmac: opts.hmac } : null;
        if (!credentials)
            throw new TypeError('Gateway.connect needs {token} or {hmac: {clientId, secret}}');
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
        this.volk = Object.assign((alias, o = {}) => this.makeVolk(alias, o), ns.volk);
    }
    /** Connects and authenticates; rejects with the gateway's error (`InvalidCredentials`, ...). */
    static async connect(url, opts) {
        const gw = new Gateway(url, opts);
        await gw.conn.open();
        return gw;
    }
    /** What `auth.authenticate` answered last (scope, client id, capabilities). */
    get authInfo() {
        return this.conn.auth;
    }
    /** The connection underneath (its `frame` takes a text frame as if the gateway sent it). */
    get connection() {
        return this.conn;
    }
    /** Reconnect counters. */
    get stats() {
        return this.conn.stats;
    }
    /**
     * Calls `method`. Methods that take an `idempotency_key` get one (a fresh UUID unless
     * `options.idempotencyKey` names it), so the call is repeated after a reconnect and
     * executed once; reads are repeated too; anything else rejects with `ConnectionClosed`
     * when the connection drops before the answer.
     */
    call(method, params, options = {}) {
        let p = (params ?? {});
        const keyed = IDEMPOTENT_METHODS.has(method);
        if (keyed && p.idempotency_key === undefined)
            p = { ...p, idempotency_key: options.idempotencyKey ?? randomId() };
        const safe = keyed || READ_METHODS.has(method);
        return this.conn.call(method, p, safe, options.timeoutMs);
    }
    /**
     * Subscribes to `topic`; iterate it with `for await`. One live subscription per topic
     * and connection (the gateway's notifications name the topic, not the subscription).
     */
    async subscribe(topic, opts = {}) {
        if (this.draining)
            throw new ConnectionClosed(1000, 'draining', { reason: 'draining' });
        if (this.subs.has(topic))
            throw new Error(`already subscribed to ${topic} on this connection; open another Gateway for a second filter`);
        const sub = new Subscription(this, topic, { onLoss: this.opts.onLoss, ...opts });
        this.subs.set(topic, sub);
        try {
            await sub.start();
        }
        catch (e) {
            this.subs.delete(topic);
            throw e;
        }
        return sub;
    }
    makeVolk(alias, opts) {
        const v = new Volk(this, alias, opts, () => this.volks.delete(v));
        this.volks.add(v);
        return v;
    }
    /**
     * Shuts down gracefully: inboxes stop after the packet in hand, subscriptions end,
     * pending calls are answered, then the socket closes.
     */
    async drain() {
        this.draining = true;
        await Promise.all([...this.volks].map((v) => v.stop()));
        await Promise.all([...this.subs.values()].map((s) => s.close()));
        while (this.conn.pendingCount > 0)
            await new Promise((r) => setTimeout(r, 10));
        this.conn.close();
    }
    /** Closes at once; pending calls reject with `ConnectionClosed`. */
    close() {
        for (const s of [...this.subs.values()])
            void s.close();
        this.conn.close();
    }
    // --- SubscriptionHost -----------------------------------------------------------
    /** @internal */
    subscribeRaw(params) {
        return this.conn.rawCall(null, 'gateway.subscribe', params);
    }
    /** @internal */
    async unsubscribeRaw(id) {
        await this.conn.call('gateway.unsubscribe', { subscription_id: id }, false, 5_000);
    }
    /** @internal */
    async replayRange(topic, from, to, filters) {
        const params = { topic, sequence_from: from, sequence_to: to };
        if (filters)
            params.filters = filters;
        const r = await this.call('gateway.replay', params);
        return r.events;
    }
    /** @internal */
    forget(sub) {
        if (this.subs.get(sub.topic) === sub)
            this.subs.delete(sub.topic);
    }
    async resubscribe() {
        for (const sub of this.subs.values())
            await sub.start();
    }
    notification(method, params) {
        if (method === 'gateway.gap') {
            this.subs.get(String(params.topic))?.gap(params);
            return;
        }
        const topic = typeof params.topic === 'string' ? params.topic : method;
        this.subs.get(topic)?.push(params);
    }
}
