//! A client's outbound queue: responses in order, events bounded with drop-oldest, and
//! gap notices where events were dropped (REQ-014-189..191, ERR-014).
//!
//! Everything sent to one client goes through its [`Outbox`], drained by the
//! connection's writer in the order it was queued. Two kinds of frame share it:
//!
//! - **control** frames (responses, heartbeat pings) are never dropped. At most
//!   [`CONTROL_CAPACITY`] wait at a time; beyond that the connection's reader waits for
//!   room before it reads the client's next request, so a client that sends without
//!   reading slows only itself.
//! - **event** frames (topic notifications) never wait: at most `event_capacity`
//!   (`event_buffer_per_client`, default 1,000) are queued, and an event arriving at a
//!   full queue evicts the *oldest* queued event. Pushing an event is a few pointer
//!   copies under a short lock, so the topic hubs — and through them the log tail and
//!   every other client — never wait for a slow client.
//!
//! Evicted events are not forgotten: the slot of the first evicted event of a
//! subscription becomes a *gap* that counts the evicted events and their sequence
//! range; later evictions of the same subscription extend it. When the writer reaches
//! it — that is, when the client catches up — it is sent as a `gateway.gap`
//! notification, before any newer event of that subscription:
//!
//! ```json
//! {"jsonrpc":"2.0","method":"gateway.gap","params":{"topic":"cxp.traffic",
//!  "subscription":"sub-…","dropped":250,"sequence_from":1001,"sequence_to":1250,"epoch":"…"}}
//! ```
//!
//! so the client can fetch exactly what it missed with `gateway.replay
//! {topic, sequence_from, sequence_to, filters}` (the subscription's filters). Because
//! eviction always takes the oldest event, every evicted event of a subscription is
//! older than every event of it still queued: the range has no delivered event inside.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::extract::ws::Utf8Bytes;
use orchestrata_schemas::events::Stream;
use prometheus::IntCounter;
use serde_json::json;
use tokio::sync::Notify;

/// Most control frames (responses, pings) queued for one client before the reader
/// waits for room.
pub const CONTROL_CAPACITY: usize = 256;

/// Method of the notification that reports evicted events (the contract names none).
pub const GAP_METHOD: &str = "gateway.gap";

/// Where an event was headed: one subscription of one client. Built once per
/// subscription and shared by every event queued for it (no allocation per event).
#[derive(Debug)]
pub struct Origin {
    /// The topic.
    pub topic: Stream,
    /// The subscription id (`sub-…`).
    pub subscription: String,
    /// The topic's epoch: the gap's sequences are positions in it.
    pub epoch: String,
    /// `orchestrata_gateway_events_dropped_total{topic}`, resolved once.
    pub dropped: IntCounter,
}

/// Events of one subscription evicted before the client read them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gap {
    /// How many events were evicted.
    pub dropped: u64,
    /// The lowest evicted sequence.
    pub sequence_from: u64,
    /// The highest evicted sequence.
    pub sequence_to: u64,
}

impl Gap {
    /// A gap of the one event `sequence`.
    pub fn one(sequence: u64) -> Self {
        Gap {
            dropped: 1,
            sequence_from: sequence,
            sequence_to: sequence,
        }
    }

    /// Adds the evicted event `sequence`.
    pub fn add(&mut self, sequence: u64) {
        self.dropped += 1;
        self.sequence_from = self.sequence_from.min(sequence);
        self.sequence_to = self.sequence_to.max(sequence);
    }

    /// The `gateway.gap` notification frame for `origin`.
    pub fn frame(&self, origin: &Origin) -> Utf8Bytes {
        let v = json!({
            "jsonrpc": "2.0",
            "method": GAP_METHOD,
            "params": {
                "topic": origin.topic.as_str(),
                "subscription": origin.subscription,
                "dropped": self.dropped,
                "sequence_from": self.sequence_from,
                "sequence_to": self.sequence_to,
                "epoch": origin.epoch,
            }
        });
        Utf8Bytes::from(v.to_string())
    }
}

/// A frame for the writer.
#[derive(Debug, Clone)]
pub enum Outbound {
    /// A text frame.
    Frame(Utf8Bytes),
    /// A heartbeat ping.
    Ping,
}

enum Item {
    Control(Outbound),
    Event {
        frame: Utf8Bytes,
        sequence: u64,
        origin: Arc<Origin>,
    },
    Gap(Gap, Arc<Origin>),
}

#[derive(Default)]
struct Queue {
    items: VecDeque<Item>,
    events: usize,
    controls: usize,
    closed: bool,
}

/// One client's outbound queue (see the module docs).
pub struct Outbox {
    queue: Mutex<Queue>,
    ready: Notify,
    room: Notify,
    event_capacity: usize,
}

impl Outbox {
    /// An empty outbox holding at most `event_capacity` events (at least 1).
    pub fn new(event_capacity: usize) -> Self {
        Outbox {
            queue: Mutex::new(Queue::default()),
            ready: Notify::new(),
            room: Notify::new(),
            event_capacity: event_capacity.max(1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Events queued now.
    pub fn queued_events(&self) -> usize {
        self.lock().events
    }

    fn wake_writer(&self, was_empty: bool) {
        if was_empty {
            self.ready.notify_one();
        }
    }

    /// Queues an event without waiting, evicting the oldest queued event if the outbox
    /// is full. Returns how many events were evicted (0 or 1). Ignored once closed.
    pub fn push_event(&self, frame: Utf8Bytes, sequence: u64, origin: &Arc<Origin>) -> usize {
        let mut q = self.lock();
        if q.closed {
            return 0;
        }
        let evicted = if q.events >= self.event_capacity {
            usize::from(evict_oldest(&mut q))
        } else {
            0
        };
        let was_empty = q.items.is_empty();
        q.items.push_back(Item::Event {
            frame,
            sequence,
            origin: origin.clone(),
        });
        q.events += 1;
        drop(q);
        self.wake_writer(was_empty);
        evicted
    }

    /// Queues an event, waiting while the outbox is full (for replays the gateway
    /// paces itself: nothing is evicted). `false` once the connection is gone.
    pub async fn push_event_wait(
        &self,
        frame: Utf8Bytes,
        sequence: u64,
        origin: &Arc<Origin>,
    ) -> bool {
        let mut frame = Some(frame);
        loop {
            let room = self.room.notified();
            tokio::pin!(room);
            room.as_mut().enable();
            {
                let mut q = self.lock();
                if q.closed {
                    return false;
                }
                if q.events < self.event_capacity {
                    let was_empty = q.items.is_empty();
                    if let Some(frame) = frame.take() {
                        q.items.push_back(Item::Event {
                            frame,
                            sequence,
                            origin: origin.clone(),
                        });
                        q.events += 1;
                    }
                    drop(q);
                    self.wake_writer(was_empty);
                    return true;
                }
            }
            room.await;
        }
    }

    /// Queues a gap found outside the outbox (events a pending subscription could not
    /// buffer), in order with the other frames.
    pub fn push_gap(&self, gap: Gap, origin: &Arc<Origin>) {
        let mut q = self.lock();
        if q.closed {
            return;
        }
        let was_empty = q.items.is_empty();
        q.items.push_back(Item::Gap(gap, origin.clone()));
        drop(q);
        self.wake_writer(was_empty);
    }

    /// Queues a control frame, waiting while [`CONTROL_CAPACITY`] are queued. `false`
    /// once the connection is gone.
    pub async fn push_control(&self, out: Outbound) -> bool {
        let mut out = Some(out);
        loop {
            let room = self.room.notified();
            tokio::pin!(room);
            room.as_mut().enable();
            {
                let mut q = self.lock();
                if q.closed {
                    return false;
                }
                if q.controls < CONTROL_CAPACITY {
                    if let Some(out) = out.take() {
                        self.queue_control(&mut q, out);
                    }
                    return true;
                }
            }
            room.await;
        }
    }

    /// Queues a control frame if there is room, without waiting.
    pub fn try_push_control(&self, out: Outbound) -> bool {
        let mut q = self.lock();
        if q.closed || q.controls >= CONTROL_CAPACITY {
            return false;
        }
        self.queue_control(&mut q, out);
        true
    }

    fn queue_control(&self, q: &mut MutexGuard<'_, Queue>, out: Outbound) {
        let was_empty = q.items.is_empty();
        q.items.push_back(Item::Control(out));
        q.controls += 1;
        self.wake_writer(was_empty);
    }

    /// Waits until something may be queued (returns at once if a wake-up is pending).
    pub async fn ready(&self) {
        self.ready.notified().await;
    }

    /// Moves up to `max` frames, oldest first, into `out` (gaps rendered as
    /// `gateway.gap` notifications) and wakes anyone waiting for room.
    pub fn drain(&self, out: &mut Vec<Outbound>, max: usize) {
        let mut q = self.lock();
        let n = q.items.len().min(max);
        let mut events = 0;
        let mut controls = 0;
        for item in q.items.drain(..n) {
            out.push(match item {
                Item::Control(o) => {
                    controls += 1;
                    o
                }
                Item::Event { frame, .. } => {
                    events += 1;
                    Outbound::Frame(frame)
                }
                Item::Gap(gap, origin) => Outbound::Frame(gap.frame(&origin)),
            });
        }
        q.events -= events;
        q.controls -= controls;
        drop(q);
        if n > 0 {
            self.room.notify_waiters();
        }
    }

    /// Refuses everything from now on and releases every waiter (the connection ended).
    pub fn close(&self) {
        let mut q = self.lock();
        q.closed = true;
        q.items.clear();
        q.events = 0;
        q.controls = 0;
        drop(q);
        self.room.notify_waiters();
        self.ready.notify_one();
    }

    /// Whether [`Outbox::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }
}

/// Evicts the oldest queued event into its subscription's gap. Every gap lies before
/// the first queued event, so the search never passes an event.
fn evict_oldest(q: &mut Queue) -> bool {
    let Some(at) = q.items.iter().position(|i| matches!(i, Item::Event { .. })) else {
        return false;
    };
    let (sequence, origin) = match &q.items[at] {
        Item::Event {
            sequence, origin, ..
        } => (*sequence, origin.clone()),
        _ => return false,
    };
    origin.dropped.inc();
    q.events -= 1;
    let existing = q.items.range_mut(..at).find_map(|i| match i {
        Item::Gap(gap, o) if Arc::ptr_eq(o, &origin) => Some(gap),
        _ => None,
    });
    match existing {
        Some(gap) => {
            gap.add(sequence);
            q.items.remove(at);
        }
        None => q.items[at] = Item::Gap(Gap::one(sequence), origin),
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(sub: &str) -> Arc<Origin> {
        Arc::new(Origin {
            topic: Stream::CxpTraffic,
            subscription: sub.into(),
            epoch: "e1".into(),
            dropped: IntCounter::new("dropped", "test").expect("counter"),
        })
    }

    fn texts(out: &[Outbound]) -> Vec<String> {
        out.iter()
            .map(|o| match o {
                Outbound::Frame(f) => f.to_string(),
                Outbound::Ping => "ping".into(),
            })
            .collect()
    }

    // REQ-014-189 REQ-014-190 REQ-014-191
    #[test]
    fn a_full_outbox_evicts_the_oldest_events_into_one_gap_before_the_rest() {
        let ob = Outbox::new(3);
        let a = origin("sub-a");
        for seq in 1..=7u64 {
            ob.push_event(Utf8Bytes::from(format!("e{seq}")), seq, &a);
        }
        assert_eq!(ob.queued_events(), 3);
        assert_eq!(a.dropped.get(), 4);
        let mut out = Vec::new();
        ob.drain(&mut out, 100);
        let t = texts(&out);
        assert_eq!(t.len(), 4);
        let gap: serde_json::Value = serde_json::from_str(&t[0]).expect("gap JSON");
        assert_eq!(gap["method"], GAP_METHOD);
        assert_eq!(gap["params"]["dropped"], 4);
        assert_eq!(gap["params"]["sequence_from"], 1);
        assert_eq!(gap["params"]["sequence_to"], 4);
        assert_eq!(gap["params"]["subscription"], "sub-a");
        assert_eq!(gap["params"]["epoch"], "e1");
        assert_eq!(&t[1..], ["e5", "e6", "e7"]);
        assert_eq!(ob.queued_events(), 0);
    }

    // REQ-014-190
    #[test]
    fn responses_are_never_evicted_and_keep_their_place() {
        let ob = Outbox::new(2);
        let a = origin("sub-a");
        let b = origin("sub-b");
        assert!(ob.try_push_control(Outbound::Frame(Utf8Bytes::from("r1"))));
        ob.push_event(Utf8Bytes::from("a1"), 1, &a);
        ob.push_event(Utf8Bytes::from("b1"), 1, &b);
        ob.push_event(Utf8Bytes::from("a2"), 2, &a); // evicts a1
        ob.push_event(Utf8Bytes::from("b2"), 2, &b); // evicts b1
        ob.push_event(Utf8Bytes::from("a3"), 3, &a); // evicts a2 into a's gap
        let mut out = Vec::new();
        ob.drain(&mut out, 100);
        let t = texts(&out);
        assert_eq!(t[0], "r1");
        let g1: serde_json::Value = serde_json::from_str(&t[1]).expect("gap");
        let g2: serde_json::Value = serde_json::from_str(&t[2]).expect("gap");
        assert_eq!(g1["params"]["subscription"], "sub-a");
        assert_eq!(g1["params"]["dropped"], 2);
        assert_eq!(g1["params"]["sequence_to"], 2);
        assert_eq!(g2["params"]["subscription"], "sub-b");
        assert_eq!(g2["params"]["dropped"], 1);
        assert_eq!(&t[3..], ["b2", "a3"]);
    }

    // REQ-014-189
    #[test]
    fn a_closed_outbox_refuses_everything() {
        let ob = Outbox::new(2);
        ob.close();
        assert!(ob.is_closed());
        assert_eq!(ob.push_event(Utf8Bytes::from("x"), 1, &origin("s")), 0);
        assert!(!ob.try_push_control(Outbound::Ping));
        let mut out = Vec::new();
        ob.drain(&mut out, 10);
        assert!(out.is_empty());
    }
}
