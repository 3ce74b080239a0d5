// A topic subscription that survives reconnects without a gap or a duplicate.
//
// Events are yielded in log order. An event counts as processed when the consumer asks
// for the next one (or calls `commit()`); `position` is the last processed
// `(epoch, sequence)`, and `onCommit` sees every new position (a cursor file keeps it).
// After a reconnect the subscription is made again with `since` = the last event
// handed out, so the gateway replays what was missed from the log; anything at or below
// what was already handed out is dropped. A `gateway.gap` notice (the gateway dropped
// events for a slow client, ERR-014) sits in the queue where the events were, and is
// filled with `gateway.replay` of exactly that range when the consumer reaches it.

import { EpochMismatch, PositionTruncated, type GapNotice } from './errors.js';
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

/** Sequences per `gateway.replay` page when filling a range (within `max_replay_scan`). */
const REPLAY_PAGE = 5_000;

type Item = { kind: 'event'; event: GatewayEvent } | { kind: 'gap'; from: number; to: number };

export class Subscription implements AsyncIterable<GatewayEvent> {
  readonly topic: Topic;
  readonly filters: Filters | undefined;
  private readonly host: SubscriptionHost;
  private readonly opts: SubscribeOptions;
  /** The gateway's id of the live subscription. */
  id: string | null = null;
  /** The last processed position, or null before the first event. */
  position: Position | null;
  /** The topic's log epoch as last seen. */
  epoch: string | null;
  /** The sequence of the last event handed out (processed or being processed). */
  private handed: number | null;
  private pendingCommit: Position | null = null;
  private queue: Item[] = [];
  private wake: (() => void) | null = null;
  private ended = false;
  readonly stats = { events: 0, duplicatesDropped: 0, gapsFilled: 0, resumes: 0 };

  constructor(host: SubscriptionHost, topic: Topic, opts: SubscribeOptions) {
    this.host = host;
    this.topic = topic;
    this.filters = opts.filters;
    this.opts = opts;
    const since = opts.since && opts.since !== 'beginning' ? opts.since : null;
    this.position = since;
    this.epoch = since?.epoch ?? null;
    this.handed = since?.sequence ?? null;
  }

  /** Subscribes (first time or after a reconnect). */
  async start(): Promise<void> {
    const params: GatewaySubscribeParams = { topic: this.topic };
    if (this.filters) params.filters = this.filters;
    if (this.opts.maxPayloadSize !== undefined) params.max_payload_size = this.opts.maxPayloadSize;
    let r: GatewaySubscribeResult;
    if (this.epoch !== null && this.handed !== null && this.handed >= 0) {
      r = await this.resume(params, { epoch: this.epoch, sequence: this.handed });
    } else {
      // No position to resume from: `handed === -1` means "everything from 0" (asked
      // for, or nothing existed when we first subscribed); otherwise start live.
      const fromStart = this.handed === -1 || (this.handed === null && this.opts.since === 'beginning');
      r = await this.host.subscribeRaw(params);
      const live = Number(r.live_from_sequence);
      if (Number.isSafeInteger(live) && live >= 0) {
        if (fromStart && live > 0) this.queue.unshift({ kind: 'gap', from: 0, to: live - 1 });
        if (this.handed === null) this.handed = fromStart ? -1 : live - 1;
      }
    }
    this.id = r.subscription_id;
    if (typeof r.epoch === 'string') this.epoch = r.epoch;
    this.signal();
  }

  private async resume(params: GatewaySubscribeParams, since: Position): Promise<GatewaySubscribeResult> {
    this.stats.resumes += 1;
    this.queue = this.queue.filter((i) => i.kind === 'gap');
    try {
      return await this.host.subscribeRaw({ ...params, since });
    } catch (e) {
      if (e instanceof EpochMismatch) {
        this.opts.onLoss?.(this.topic, since.sequence + 1, null, 'epoch_mismatch');
        this.epoch = null;
        this.handed = null;
        return this.host.subscribeRaw(params);
      }
      if (e instanceof PositionTruncated) {
        const first = Number(e.data.first_sequence ?? 0);
        this.opts.onLoss?.(this.topic, since.sequence + 1, first - 1, 'position_truncated');
        this.handed = first - 1;
        return this.host.subscribeRaw({ ...params, since: { epoch: since.epoch, sequence: first - 1 } });
      }
      throw e;
    }
  }

  /** An event notification of this subscription's topic. */
  push(event: GatewayEvent): void {
    if (this.ended) return;
    this.queue.push({ kind: 'event', event });
    this.signal();
  }

  /** A `gateway.gap` notice for this subscription. */
  gap(g: GapNotice): void {
    if (this.ended) return;
    this.opts.onGap?.(g);
    if (this.opts.fillGaps === false) {
      if (this.handed === null || g.sequence_to > this.handed) this.handed = g.sequence_to;
      return;
    }
    this.queue.push({ kind: 'gap', from: g.sequence_from, to: g.sequence_to });
    this.signal();
  }

  /** Marks the event handed out last as processed (the iterator does it on `next()`). */
  async commit(): Promise<void> {
    const p = this.pendingCommit;
    if (!p) return;
    this.pendingCommit = null;
    this.position = p;
    await this.opts.onCommit?.(p);
  }

  /** Ends the subscription: unsubscribes and finishes the iterator. */
  async close(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    this.signal();
    this.host.forget(this);
    if (this.id) await this.host.unsubscribeRaw(this.id).catch(() => {});
  }

  async *[Symbol.asyncIterator](): AsyncIterator<GatewayEvent> {
    while (true) {
      await this.commit();
      const item = await this.take();
      if (!item) return;
      if (item.kind === 'event') {
        if (this.accept(item.event)) yield item.event;
        continue;
      }
      const from = Math.max(item.from, (this.handed ?? -1) + 1);
      if (from > item.to) continue;
      this.stats.gapsFilled += 1;
      for (let cur = from; cur <= item.to; cur += REPLAY_PAGE) {
        const to = Math.min(item.to, cur + REPLAY_PAGE - 1);
        for (const event of await this.host.replayRange(this.topic, cur, to, this.filters)) {
          if (this.accept(event)) {
            yield event;
            await this.commit();
          }
          if (this.ended) return;
        }
      }
    }
  }

  /** Whether `event` is new; if so it becomes the one handed out. */
  private accept(event: GatewayEvent): boolean {
    if (this.epoch !== null && event.epoch !== this.epoch) {
      this.opts.onLoss?.(this.topic, (this.handed ?? -1) + 1, null, 'epoch_changed');
      this.handed = null;
    } else if (this.handed !== null && event.sequence <= this.handed) {
      this.stats.duplicatesDropped += 1;
      return false;
    }
    this.epoch = event.epoch;
    this.handed = event.sequence;
    this.pendingCommit = { epoch: event.epoch, sequence: event.sequence };
    this.stats.events += 1;
    return true;
  }

  private async take(): Promise<Item | null> {
    while (!this.queue.length) {
      if (this.ended) return null;
      await new Promise<void>((r) => (this.wake = r));
    }
    return this.queue.shift() ?? null;
  }

  private signal(): void {
    const w = this.wake;
    this.wake = null;
    w?.();
  }
}
