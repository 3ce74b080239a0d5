import { type ClientMetadata } from './auth.js';
import { Connection, type ReconnectOptions, type Status } from './connection.js';
import { type CallOptions, type MethodMap, type MethodName, type Namespaces } from './generated/methods.js';
import type { AuthAuthenticateResult, GatewayEvent, GatewaySubscribeParams, GatewaySubscribeResult } from './generated/types.js';
import type { SocketConstructor } from './socket.js';
import { Subscription, type Filters, type SubscribeOptions, type SubscriptionHost, type Topic } from './subscription.js';
import { Volk, type VolkOptions } from './volk.js';
export interface GatewayOptions {
    /** The operator's or a `gateway.tokens` token. */
    token?: string;
    /** An HMAC client of `gateway.hmac.clients`. */
    hmac?: {
        clientId: string;
        secret: string;
    };
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
export interface Gateway extends Omit<Namespaces, 'volk'> {
}
export declare class Gateway implements SubscriptionHost {
    private readonly conn;
    private readonly opts;
    private readonly subs;
    private readonly volks;
    private draining;
    /** The agent loop of Volk `alias` (`for await (const packet of gw.volk(alias).inbox())`), and the `volk.*` methods. */
    readonly volk: VolkNamespace;
    private constructor();
    /** Connects and authenticates; rejects with the gateway's error (`InvalidCredentials`, ...). */
    static connect(url: string, opts: GatewayOptions): Promise<Gateway>;
    /** What `auth.authenticate` answered last (scope, client id, capabilities). */
    get authInfo(): AuthAuthenticateResult;
    /** The connection underneath (its `frame` takes a text frame as if the gateway sent it). */
    get connection(): Connection;
    /** Reconnect counters. */
    get stats(): {
        connects: number;
        reconnects: number;
        retried: number;
    };
    /**
     * Calls `method`. Methods that take an `idempotency_key` get one (a fresh UUID unless
     * `options.idempotencyKey` names it), so the call is repeated after a reconnect and
     * executed once; reads are repeated too; anything else rejects with `ConnectionClosed`
     * when the connection drops before the answer.
     */
    call<M extends MethodName>(method: M, params?: MethodMap[M]['params'], options?: CallOptions): Promise<MethodMap[M]['result']>;
    /**
     * Subscribes to `topic`; iterate it with `for await`. One live subscription per topic
     * and connection (the gateway's notifications name the topic, not the subscription).
     */
    subscribe(topic: Topic, opts?: SubscribeOptions): Promise<Subscription>;
    private makeVolk;
    /**
     * Shuts down gracefully: inboxes stop after the packet in hand, subscriptions end,
     * pending calls are answered, then the socket closes.
     */
    drain(): Promise<void>;
    /** Closes at once; pending calls reject with `ConnectionClosed`. */
    close(): void;
    /** @internal */
    subscribeRaw(params: GatewaySubscribeParams): Promise<GatewaySubscribeResult>;
    /** @internal */
    unsubscribeRaw(id: string): Promise<void>;
    /** @internal */
    replayRange(topic: string, from: number, to: number, filters?: Filters): Promise<GatewayEvent[]>;
    /** @internal */
    forget(sub: Subscription): void;
    private resubscribe;
    private notification;
}
