//! One hub per topic: a single tail of the log stream, fanned out to subscribers.
//!
//! The hub's tailer reads each event once from the log, builds its notification frame
//! once ([`TopicEvent`]) and pushes the shared bytes to every client with a matching
//! subscription (at most once per client and event). Pushing never waits: it appends a
//! reference to the shared frame to the client's [`Outbox`](crate::gateway::outbox),
//! which evicts that client's oldest queued event when its buffer is full and later
//! tells it so with a `gateway.gap` notification. A slow client therefore costs the
//! tail a few pointer copies, never a wait, and never affects other clients.
//!
//! A new subscription starts *pending*: live events that match are buffered in it
//! until its owner has sent the subscribe response (and, when resuming, replayed the
//! log up to the hub's position); then [`Hub::go_live`] flushes the buffer and the
//! subscription receives events directly. `skip_below` drops events the client has
//! already seen, so the seam between replay and live has no gap and no duplicate. The
//! pending buffer is bounded like the outbox (`event_buffer_per_client`): overflow
//! evicts its oldest events into a gap that is queued ahead of the rest at go-live.
//!
//! Filters match on an event's [`Facts`]; a packet transition gets its packet's
//! parties from the packet index view, and the hub waits for that view to have folded
//! the transition before publishing it (in steady state the packet is long known and
//! nothing waits), so live filtering answers what a replay of the same events does.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::StreamExt;
use orchestrata_schemas::events::{Envelope, Stream};

use super::event::TopicEvent;
use super::facts::{facts_of, Facts, FilterIndex};
use super::filter::Filter;
use crate::gateway::client::ClientHandle;
use crate::gateway::metrics::Metrics;
use crate::gateway::outbox::{Gap, Origin};
use crate::log::EventLog;
use crate::projection::ProjectionError;

/// How long a hub waits for the packet index before saying, in the log, that it lags
/// (then it waits again).
const INDEX_WAIT: Duration = Duration::from_secs(5);

struct LiveSub {
    origin: Arc<Origin>,
    filter: Arc<Filter>,
    max_payload: Option<usize>,
    skip_below: u64,
    pending: Option<VecDeque<Arc<TopicEvent>>>,
    pending_gap: Option<Gap>,
}

struct ClientSubs {
    handle: Arc<ClientHandle>,
    subs: Vec<LiveSub>,
}

struct State {
    next: u64,
    clients: HashMap<String, ClientSubs>,
}

/// The fan-out point of one topic.
pub struct Hub {
    /// The topic.
    pub stream: Stream,
    /// The stream's epoch when the hub started.
    pub epoch: String,
    state: Mutex<State>,
    healthy: AtomicBool,
    pending_limit: usize,
    metrics: Arc<Metrics>,
}

impl Hub {
    /// A hub whose next expected sequence is `next`.
    pub fn new(
        stream: Stream,
        epoch: String,
        next: u64,
        pending_limit: usize,
        metrics: Arc<Metrics>,
    ) -> Self {
        Hub {
            stream,
            epoch,
            state: Mutex::new(State {
                next,
                clients: HashMap::new(),
            }),
            healthy: AtomicBool::new(true),
            pending_limit: pending_limit.max(1),
            metrics,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The sequence of the next event the hub will publish.
    pub fn next(&self) -> u64 {
        self.lock().next
    }

    /// Whether the hub's tail is running.
    pub fn healthy(&self) -> bool {
        self.healthy.load(Ordering::Relaxed)
    }

    /// The origin tag of subscription `subscription` on this topic: what its queued
    /// events carry so an eviction can be reported (and counted) per subscription.
    pub fn origin(&self, subscription: String) -> Arc<Origin> {
        Arc::new(Origin {
            topic: self.stream,
            subscription,
            epoch: self.epoch.clone(),
            dropped: self
                .metrics
                .events_dropped
                .with_label_values(&[self.stream.as_str()]),
        })
    }

    /// Adds a pending subscription (`origin` from [`Hub::origin`]); returns the hub's
    /// next sequence at that moment. Events below the returned sequence have been
    /// published already and must be read from the log; events from it on will be
    /// buffered, then pushed.
    pub fn add(
        &self,
        handle: Arc<ClientHandle>,
        origin: Arc<Origin>,
        filter: Arc<Filter>,
        max_payload: Option<usize>,
        skip_below: u64,
    ) -> u64 {
        let mut st = self.lock();
        let entry = st
            .clients
            .entry(handle.id.clone())
            .or_insert_with(|| ClientSubs {
                handle,
                subs: Vec::new(),
            });
        entry.subs.push(LiveSub {
            origin,
            filter,
            max_payload,
            skip_below,
            pending: Some(VecDeque::new()),
            pending_gap: None,
        });
        self.metrics
            .subscriptions
            .with_label_values(&[self.stream.as_str()])
            .inc();
        st.next
    }

    /// Flushes a pending subscription's buffer (after the gap of what it could not
    /// buffer, if any) and makes it live. `false` if there is no such subscription.
    pub fn go_live(&self, client_id: &str, id: &str) -> bool {
        let mut st = self.lock();
        let Some(entry) = st.clients.get_mut(client_id) else {
            return false;
        };
        let handle = entry.handle.clone();
        let Some(sub) = entry.subs.iter_mut().find(|s| s.origin.subscription == id) else {
            return false;
        };
        if let Some(gap) = sub.pending_gap.take() {
            handle.outbox.push_gap(gap, &sub.origin);
        }
        let buffered = sub.pending.take().unwrap_or_default();
        for event in buffered {
            handle.outbox.push_event(
                event.frame_for(sub.max_payload),
                event.sequence,
                &sub.origin,
            );
        }
        true
    }

    /// Removes one subscription; `true` if it existed.
    pub fn remove(&self, client_id: &str, id: &str) -> bool {
        let mut st = self.lock();
        let Some(entry) = st.clients.get_mut(client_id) else {
            return false;
        };
        let before = entry.subs.len();
        entry.subs.retain(|s| s.origin.subscription != id);
        let removed = entry.subs.len() < before;
        if entry.subs.is_empty() {
            st.clients.remove(client_id);
        }
        if removed {
            self.metrics
                .subscriptions
                .with_label_values(&[self.stream.as_str()])
                .dec();
        }
        removed
    }

    /// Removes every subscription of a client.
    pub fn remove_client(&self, client_id: &str) {
        let removed = self.lock().clients.remove(client_id);
        if let Some(entry) = removed {
            self.metrics
                .subscriptions
                .with_label_values(&[self.stream.as_str()])
                .sub(i64::try_from(entry.subs.len()).unwrap_or(0));
        }
    }

    /// Pushes one event to every matching subscription. Never waits: a full client
    /// outbox (or pending buffer) evicts its oldest event into a gap.
    pub fn publish(&self, event: Arc<TopicEvent>) {
        let mut st = self.lock();
        st.next = st.next.max(event.sequence + 1);
        let limit = self.pending_limit;
        for entry in st.clients.values_mut() {
            let mut sent = false;
            for sub in entry.subs.iter_mut() {
                if event.sequence < sub.skip_below || !sub.filter.matches(&event.facts) {
                    continue;
                }
                if let Some(pending) = sub.pending.as_mut() {
                    if pending.len() >= limit {
                        if let Some(old) = pending.pop_front() {
                            sub.origin.dropped.inc();
                            match sub.pending_gap.as_mut() {
                                Some(gap) => gap.add(old.sequence),
                                None => sub.pending_gap = Some(Gap::one(old.sequence)),
                            }
                        }
                    }
                    pending.push_back(event.clone());
                } else if !sent {
                    sent = true;
                    entry.handle.outbox.push_event(
                        event.frame_for(sub.max_payload),
                        event.sequence,
                        &sub.origin,
                    );
                }
            }
        }
    }

    /// Moves the hub past the event at `sequence` without publishing it when no
    /// subscription could take it: there are none, or (with `facts`) none whose filter
    /// matches. `true` if it did. The check and the move happen under the lock that
    /// [`Hub::add`] takes, so a subscription added later starts past the event and reads
    /// it from the log, like every event published before it.
    fn pass_unwanted(&self, sequence: u64, facts: Option<&Facts>) -> bool {
        let mut st = self.lock();
        let wanted = st.clients.values().any(|entry| {
            entry.subs.iter().any(|sub| {
                sequence >= sub.skip_below && facts.is_none_or(|f| sub.filter.matches(f))
            })
        });
        if !wanted {
            st.next = st.next.max(sequence + 1);
        }
        !wanted
    }

    /// Tails the log from the hub's position forever, publishing every event. A failed
    /// tail is reopened from the next unpublished sequence after a short pause, so no
    /// event is skipped.
    pub async fn run(self: Arc<Self>, log: Arc<dyn EventLog>, index: FilterIndex) {
        loop {
            let from = self.next();
            match log.tail_shared(self.stream, from).await {
                Ok(mut tail) => {
                    self.healthy.store(true, Ordering::Relaxed);
                    let mut pacer = YieldPacer::new();
                    while let Some(item) = tail.next().await {
                        match item {
                            Ok(envelope) => {
                                // Nobody subscribed: neither wait for the packet index
                                // nor render (most servers, most topics).
                                if self.pass_unwanted(envelope.sequence, None) {
                                    pacer.after_publish().await;
                                    continue;
                                }
                                let facts = self.facts(&index, &envelope).await;
                                if self.pass_unwanted(envelope.sequence, Some(&facts)) {
                                    pacer.after_publish().await;
                                    continue;
                                }
                                match TopicEvent::new(envelope, facts) {
                                    Ok(event) => {
                                        self.publish(Arc::new(event));
                                        pacer.after_publish().await;
                                    }
                                    Err(e) => {
                                        tracing::error!(topic = %self.stream, error = %e, "cannot render event")
                                    }
                                }
                            }
                            Err(e) => {
                                tracing::warn!(topic = %self.stream, error = %e, "tail failed; reopening");
                                break;
                            }
                        }
                    }
                }
                Err(e) => {
                    tracing::warn!(topic = %self.stream, error = %e, "cannot tail; retrying");
                }
            }
            self.healthy.store(false, Ordering::Relaxed);
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

impl Hub {
    /// The facts of `envelope`, final (see [`FilterIndex`]): while the packet index
    /// lags behind a transition the hub waits, warning every [`INDEX_WAIT`]; a stopped
    /// index runner (the projections failed) leaves the facts as far as it folded.
    async fn facts(&self, index: &FilterIndex, envelope: &Envelope) -> Facts {
        // ISSUE-15: filters are a function of the log
        loop {
            match index.facts(envelope, INDEX_WAIT).await {
                Ok(facts) => return facts,
                Err(e @ ProjectionError::WaitTimeout { .. }) => {
                    tracing::warn!(topic = %self.stream, error = %e, "packet index lags; waiting")
                }
                Err(e) => {
                    tracing::error!(topic = %self.stream, error = %e, "packet index stopped; filtering on what it folded");
                    return index
                        .facts_now(envelope)
                        .unwrap_or_else(|_| facts_of(envelope, &index.view().read()));
                }
            }
        }
    }
}

/// Most events a hub publishes from a backlog before it yields.
const YIELD_EVERY_EVENTS: u32 = 64;
/// Longest a hub publishes from a backlog before it yields.
const YIELD_EVERY: Duration = Duration::from_micros(1000);

/// When a hub with a backlog yields to the writers it woke.
///
/// A tail with a backlog is always ready, and the writer a publish wakes last sits in
/// this worker's LIFO slot, which other workers cannot steal: without a yield it would
/// write only after the whole backlog (and its client's buffer would overflow). Yielding
/// after every event costs a full scheduler round per event and makes every writer
/// write one frame at a time; yielding every 64 events or 1 ms lets each writer send a
/// batch of frames in one write while bounding how long any of them waits (measured in
/// docs/performance.md: 16 events / 200 µs reached half the throughput).
struct YieldPacer {
    events: u32,
    since: std::time::Instant,
}

impl YieldPacer {
    fn new() -> Self {
        YieldPacer {
            events: 0,
            since: std::time::Instant::now(),
        }
    }

    async fn after_publish(&mut self) {
        self.events += 1;
        if self.events >= YIELD_EVERY_EVENTS || self.since.elapsed() >= YIELD_EVERY {
            tokio::task::yield_now().await;
            self.events = 0;
            self.since = std::time::Instant::now();
        }
    }
}

#[cfg(test)]
#[path = "hub_tests.rs"]
mod tests;
