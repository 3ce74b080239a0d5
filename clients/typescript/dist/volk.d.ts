import { type CursorStore } from './cursor.js';
import type { CxpAckResult, CxpSendParams, CxpSendResult, CxpWorkParams, CxpWorkResult, GatewayEvent } from './generated/types.js';
import type { Gateway } from './gateway.js';
import type { Position } from './subscription.js';
export interface VolkOptions {
    /** A cursor file path (Node), or a store; default: in memory. */
    cursor?: string | CursorStore;
    /** Where to start when the cursor holds nothing: every packet the log holds (`'earliest'`, the default), or those sent from now on (`'latest'`). */
    start?: 'earliest' | 'latest';
}
/** The packet fields of a `packet_sent` event. */
export interface PacketBody {
    message_id: string;
    from_agent: string;
    to_agent: string;
    thread_id: string;
    subject: string;
    payload: unknown;
    priority?: number;
    metadata?: Record<string, unknown>;
    [key: string]: unknown;
}
type WorkStatus = CxpWorkParams['status'];
/** One packet of a Volk's inbox, with the actions its recipient may take. */
export declare class Packet {
    readonly body: PacketBody;
    /** The `packet_sent` event that carried it (sequence, epoch, timestamp). */
    readonly event: GatewayEvent;
    private readonly gw;
    private readonly volk;
    private readonly ordinals;
    private readonly onDone;
    constructor(gw: Gateway, volk: string, body: PacketBody, event: GatewayEvent, onDone?: () => Promise<void>);
    get messageId(): string;
    get threadId(): string;
    get from(): string;
    get subject(): string;
    get payload(): unknown;
    /** The key of the n-th call of `action` while handling this packet. */
    private key;
    /** Acknowledges receipt (`cxp.ack`); a still-queued packet is delivered by it. */
    ack(): Promise<CxpAckResult>;
    /** Moves the work status (`cxp.work`). */
    work(status: WorkStatus, more?: Omit<CxpWorkParams, 'message_id' | 'status' | 'idempotency_key'>): Promise<CxpWorkResult>;
    /** Marks the packet handled now (otherwise: when the loop asks for the next one). */
    done(): Promise<void>;
    /** Marks the work resolved with `resolution`. */
    resolve(resolution?: unknown, notes?: string): Promise<CxpWorkResult>;
    /**
     * Answers the sender in the same thread (`cxp.send` with `in_reply_to`). A repeat
     * after a restart answers the first reply (`duplicate: true`); if the handler built
     * another payload this time, the first reply stands and the answer is
     * `{duplicate: true, reused_key: true}`.
     */
    reply(payload: CxpSendParams['payload'], more?: Pick<CxpSendParams, 'subject' | 'priority'>): Promise<CxpSendResult>;
}
export declare class Volk {
    readonly alias: string;
    private readonly gw;
    private readonly store;
    private readonly opts;
    private readonly onDone;
    private sub;
    private stopping;
    private busy;
    private finished;
    private starting;
    private lastWasPacket;
    constructor(gw: Gateway, alias: string, opts: VolkOptions, onDone: () => void);
    /** The last handled position (what the cursor holds). */
    get position(): Position | null;
    /**
     * Subscribes now (the inbox does it on its first turn otherwise): a packet that
     * arrives from here on is in the inbox, even one caused by a call made before the
     * loop begins.
     */
    start(): Promise<void>;
    private subscribe;
    /** Packets sent to this Volk, from the cursor on. */
    inbox(): AsyncGenerator<Packet>;
    /** Stops the inbox after the packet in hand (its cursor saved). */
    stop(): Promise<void>;
}
export {};
