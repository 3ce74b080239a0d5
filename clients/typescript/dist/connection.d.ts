import { type ClientMetadata, type Credentials } from './auth.js';
import { type SocketConstructor, type SocketLike } from './socket.js';
import type { AuthAuthenticateResult } from './generated/types.js';
/** Methods that change nothing: repeated after a reconnect. (Checked against `gateway.info` by the tests.) */
export declare const READ_METHODS: ReadonlySet<string>;
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
type Notify = (method: string, params: Record<string, unknown>) => void;
type Hook = () => Promise<void>;
export declare class Connection {
    readonly url: string;
    private readonly opts;
    private ws;
    private authed;
    private nextId;
    private readonly inFlight;
    private waiting;
    private attempt;
    private stopped;
    private timer;
    /** The answer to the last `auth.authenticate`. */
    auth: AuthAuthenticateResult | null;
    /** Counters for tests and dashboards. */
    readonly stats: {
        connects: number;
        reconnects: number;
        retried: number;
    };
    notify: Notify;
    /** Run after each re-authentication, before queued calls go out (resubscribe). */
    onReconnect: Hook;
    constructor(url: string, opts: ConnectionOptions);
    /** Opens the first socket and authenticates; rejects when either fails. */
    open(): Promise<AuthAuthenticateResult>;
    /** Calls `method`; see the file comment for what is repeated after a reconnect. */
    call(method: string, params: unknown, retrySafe: boolean, timeoutMs?: number): Promise<unknown>;
    /** Calls still unanswered (sent or waiting for a socket). */
    get pendingCount(): number;
    /** Closes for good; pending calls reject with `ConnectionClosed`. */
    close(): void;
    private dial;
    /** A call on `ws` outside the queue (authentication, resubscription). */
    rawCall(ws: SocketLike | null, method: string, params: unknown): Promise<unknown>;
    private send;
    private transmit;
    /** Handles one text frame (answers and notifications); the socket calls it. */
    frame(text: string): void;
    private answer;
    private settle;
    private expire;
    private dropped;
    /** Rejects what cannot be repeated; with `keepSafe` the rest waits for the next socket. */
    private failAll;
    private schedule;
    private redial;
    private status;
}
export {};
