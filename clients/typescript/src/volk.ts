// The agent loop: a Volk's inbox as an async iterator of packets.
//
//   const volk = gw.volk('U:Vz', { cursor: 'vz.cursor' });
//   for await (const packet of volk.inbox()) {
//     await packet.ack();
//     await packet.work('in_progress');
//     await packet.reply({ echo: packet.payload });
//   }
//
// The inbox is the `cxp.traffic` subscription filtered on the Volk; every packet sent
// to it is handed out once, in log order. A packet counts as handled when the loop asks
// for the next one; the cursor (memory, or a file that a restarted process reads) then
// moves past it. Exactly-once: every action on a packet carries an idempotency key
// derived from the packet — `<message_id>:<action>:<n>` for the n-th call of `ack`,
// `work` or `reply` while handling it (the Python client's keys) — so if the agent or
// the gateway dies between an action and the cursor moving, handling the packet again
// (the same calls in the same order) changes nothing on the log.

import { FileCursor, MemoryCursor, type CursorStore } from './cursor.js';
import { IdempotencyKeyReused, InvalidParams } from './errors.js';
import type { CxpAckResult, CxpSendParams, CxpSendResult, CxpWorkParams, CxpWorkResult, GatewayEvent } from './generated/types.js';
import type { Gateway } from './gateway.js';
import type { Position, Subscription } from './subscription.js';

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
export class Packet {
  readonly body: PacketBody;
  /** The `packet_sent` event that carried it (sequence, epoch, timestamp). */
  readonly event: GatewayEvent;
  private readonly gw: Gateway;
  private readonly volk: string;
  private readonly ordinals = new Map<string, number>();
  private readonly onDone: () => Promise<void>;

  constructor(gw: Gateway, volk: string, body: PacketBody, event: GatewayEvent, onDone: () => Promise<void> = async () => {}) {
    this.onDone = onDone;
    this.gw = gw;
    this.volk = volk;
    this.body = body;
    this.event = event;
  }

  get messageId(): string { return this.body.message_id; }
  get threadId(): string { return this.body.thread_id; }
  get from(): string { return this.body.from_agent; }
  get subject(): string { return this.body.subject; }
  get payload(): unknown { return this.body.payload; }

  /** The key of the n-th call of `action` while handling this packet. */
  private key(action: string): string {
    const n = (this.ordinals.get(action) ?? 0) + 1;
    this.ordinals.set(action, n);
    return `${this.messageId}:${action}:${n}`;
  }

  /** Acknowledges receipt (`cxp.ack`); a still-queued packet is delivered by it. */
  ack(): Promise<CxpAckResult> {
    const idempotencyKey = this.key('ack');
    return untilKnown(() => this.gw.call('cxp.ack', { message_id: this.messageId }, { idempotencyKey }));
  }

  /** Moves the work status (`cxp.work`). */
  work(status: WorkStatus, more: Omit<CxpWorkParams, 'message_id' | 'status' | 'idempotency_key'> = {}): Promise<CxpWorkResult> {
    const idempotencyKey = this.key('work');
    return untilKnown(() => this.gw.call('cxp.work', { ...more, message_id: this.messageId, status }, { idempotencyKey }));
  }

  /** Marks the packet handled now (otherwise: when the loop asks for the next one). */
  done(): Promise<void> {
    return this.onDone();
  }

  /** Marks the work resolved with `resolution`. */
  resolve(resolution?: unknown, notes?: string): Promise<CxpWorkResult> {
    const more: Record<string, unknown> = {};
    if (resolution !== undefined) more.resolution = resolution;
    if (notes !== undefined) more.notes = notes;
    return this.work('resolved', more);
  }

  /**
   * Answers the sender in the same thread (`cxp.send` with `in_reply_to`). A repeat
   * after a restart answers the first reply (`duplicate: true`); if the handler built
   * another payload this time, the first reply stands and the answer is
   * `{duplicate: true, reused_key: true}`.
   */
  async reply(payload: CxpSendParams['payload'], more: Pick<CxpSendParams, 'subject' | 'priority'> = {}): Promise<CxpSendResult> {
    const params: CxpSendParams = {
      from: this.volk,
      target: this.from,
      subject: more.subject ?? this.subject,
      payload,
      thread_id: this.threadId,
      in_reply_to: this.messageId,
    };
    if (more.priority !== undefined) params.priority = more.priority;
    const idempotencyKey = this.key('reply');
    try {
      return await this.gw.call('cxp.send', params, { idempotencyKey });
    } catch (e) {
      if (!(e instanceof IdempotencyKeyReused)) throw e;
      return { status: 'sent', thread_id: this.threadId, duplicate: true, reused_key: true, idempotency_key: idempotencyKey };
    }
  }
}

/** Non-packet events between two cursor writes (a lagging cursor only re-skips them). */
const SKIP_SAVE_EVERY = 256;

export class Volk {
  readonly alias: string;
  private readonly gw: Gateway;
  private readonly store: CursorStore;
  private readonly opts: VolkOptions;
  private readonly onDone: () => void;
  private sub: Subscription | null = null;
  private stopping = false;
  private busy = false;
  private finished: Promise<void> = Promise.resolve();
  private starting: Promise<void> | null = null;
  private lastWasPacket = false;

  constructor(gw: Gateway, alias: string, opts: VolkOptions, onDone: () => void) {
    this.gw = gw;
    this.alias = alias;
    this.opts = opts;
    this.onDone = onDone;
    const c = opts.cursor;
    this.store = typeof c === 'string' ? new FileCursor(c) : (c ?? new MemoryCursor());
  }

  /** The last handled position (what the cursor holds). */
  get position(): Position | null {
    return this.sub?.position ?? null;
  }

  /**
   * Subscribes now (the inbox does it on its first turn otherwise): a packet that
   * arrives from here on is in the inbox, even one caused by a call made before the
   * loop begins.
   */
  async start(): Promise<void> {
    if (!this.starting) this.starting = this.subscribe();
    await this.starting;
  }

  private async subscribe(): Promise<void> {
    const saved = await this.store.load();
    let skipped = 0;
    this.sub = await this.gw.subscribe('cxp.traffic', {
      filters: { volk_id: this.alias },
      since: saved ?? ((this.opts.start ?? 'earliest') === 'earliest' ? 'beginning' : null),
      onCommit: async (p) => {
        if (this.lastWasPacket || ++skipped >= SKIP_SAVE_EVERY) {
          skipped = 0;
          await this.store.save(p);
        }
      },
    });
  }

  /** Packets sent to this Volk, from the cursor on. */
  async *inbox(): AsyncGenerator<Packet> {
    let release = (): void => {};
    this.finished = new Promise((r) => (release = r));
    try {
      await this.start();
      if (!this.sub) return;
      for await (const event of this.sub) {
        const body = packetFor(event, this.alias);
        this.lastWasPacket = body !== null;
        if (!body) continue;
        this.busy = true;
        yield new Packet(this.gw, this.alias, body, event, () => this.sub?.commit() ?? Promise.resolve());
        this.busy = false;
        if (this.stopping) {
          await this.sub.commit();
          break;
        }
      }
    } finally {
      this.busy = false;
      await this.sub?.close();
      this.onDone();
      release();
    }
  }

  /** Stops the inbox after the packet in hand (its cursor saved). */
  async stop(): Promise<void> {
    this.stopping = true;
    if (!this.busy) await this.sub?.close();
    await this.finished;
  }
}

/** How long a packet action waits for the gateway's thread view to know the packet. */
const VIEW_WAIT_MS = 5_000;

/**
 * Runs `action`, repeating it while the gateway answers `unknown_packet`: the
 * notification and the gateway's thread view both follow the log, and the notification
 * may come first. Bounded like the gateway's own read-your-write wait.
 */
async function untilKnown<T>(action: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + VIEW_WAIT_MS;
  for (let wait = 5; ; wait = Math.min(wait * 2, 200)) {
    try {
      return await action();
    } catch (e) {
      if (!(e instanceof InvalidParams && e.reason === 'unknown_packet') || Date.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, wait));
    }
  }
}

function packetFor(event: GatewayEvent, alias: string): PacketBody | null {
  if (event.event_type !== 'packet_sent') return null;
  const packet = (event.payload as { packet?: PacketBody }).packet;
  if (!packet || packet.to_agent !== alias || typeof packet.message_id !== 'string') return null;
  // The log keeps a JSON payload as `{"json": ...}`: hand out the JSON itself.
  const p = packet.payload as Record<string, unknown> | null;
  if (p && typeof p === 'object' && !Array.isArray(p) && Object.keys(p).length === 1 && 'json' in p) {
    return { ...packet, payload: p.json };
  }
  return packet;
}
