import { type GapNotice } from './errors.js';
import type { GatewayEvent, GatewaySubscribeParams, GatewaySubscribeResult } from './generated/types.js';
/** A resume position: the last event processed. */
export interface Position {
    epoch: string;
    sequence: number;
}
export type Topic = GatewaySubscribeParams['topic'];
export type Filters = NonNullable<GatewaySubscribeParams['filters']>;
export interface SubscribeOptions {
    filters?: Filters;
    maxPayloadSize?: number;
    /** Resume after this position; `'beginning'` replays the topic from sequence 0 first. */
    since?: Position | 'beginning' | null;
    /** Every newly processed position. */
    onCommit?: (p: Position) => void | Promise<void>;
    /**
     * `false`: a `gateway.gap` notice is not filled but handed to `onGap` and skipped
     * (for a viewer that offers the fill itself). Default `true`.
     */
    fillGaps?: boolean;
    onGap?: (g: GapNotice) => void;
    /** A range that could not be replayed (retention dropped it, or the log was recreated). */
    onLoss?: (topic: string, from: number, to: number | null, why: string) => void;
}
/** What a subscription needs of the gateway. */
export interface SubscriptionHost {
    subscribeRaw(params: GatewaySubscribeParams): Promise<GatewaySubscribeResult>;
    unsubscribeRaw(id: string): Promise<void>;
    replayRange(topic: string, from: number, to: number, filters?: Filters): Promise<GatewayEvent[]>;
    forget(sub: Subscription): void;
}
export declare class Subscription implements AsyncIterable<GatewayEvent> {
    readonly topic: Topic;
    readonly filters: Filters | undefined;
    private readonly host;
    private readonly opts;
    /** The gateway's id of the live subscription. */
    id: string | null;
    /** The last processed position, or null before the first event. */
    position: Position | null;
    /** The topic's log epoch as last seen. */
    epoch: string | null;
    /** The sequence of the last event handed out (processed or being processed). */
    private handed;
    private pendingCommit;
    private queue;
    private wake;
    private ended;
    readonly stats: {
        events: number;
        duplicatesDropped: number;
        gapsFilled: number;
        resumes: number;
    };
    constructor(host: SubscriptionHost, topic: Topic, opts: SubscribeOptions);
    /** Subscribes (first time or after a reconnect). */
    start(): Promise<void>;
    private resume;
    /** An event notification of this subscription's topic. */
    push(event: GatewayEvent): void;
    /** A `gateway.gap` notice for this subscription. */
    gap(g: GapNotice): void;
    /** Marks the event handed out last as processed (the iterator does it on `next()`). */
    commit(): Promise<void>;
    /** Ends the subscription: unsubscribes and finishes the iterator. */
    close(): Promise<void>;
    [Symbol.asyncIterator](): AsyncIterator<GatewayEvent>;
    /** Whether `event` is new; if so it becomes the one handed out. */
    private accept;
    private take;
    private signal;
}
