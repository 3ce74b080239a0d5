//! Following the partitions as they grow: one long-lived consumer per log (per
//! process), assigned every open topic, and per topic a [`Follower`] that keeps the
//! newest records in memory ([`Cache`]).
//!
//! Every read near the end of a stream — a tail's next page, a fold catching up, the
//! kernel's and governance's "what is new since N" — is answered from the cache with
//! no round trip to the broker, and every tail of the topic is woken by the follower's
//! end (a `watch`), not by a consumer of its own. Only ranges older than the cache go to
//! the broker (a one-off consumer, see [`super::fetch`]). One consumer for all topics
//! means one fetch request per poll interval for the whole process, however many
//! streams and tails it has.
//!
//! A topic is opened by reading it to the end of its partition with a one-off consumer
//! (the end is learnt by reading, never from ListOffsets, which is wrong on some
//! brokers); that read seeds the cache, and the follower goes on from its end. Records
//! this process appended enter the cache when the broker acknowledges them
//! ([`Follower::acked`]), so a process reads its own writes without waiting for the
//! next fetch.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};
use tokio::sync::watch;

use super::cache::Cache;
use super::fetch::{consumer_config, Fetched};
use super::quiet::{is_end_of_partition, Quiet};

/// How long the broker may hold the follower's fetch when nothing is new: the bound on
/// how late this process sees another one's append (one fetch per interval for all
/// topics together).
const FETCH_WAIT_MS: u32 = 5;
/// How long one poll of the consumer blocks (bounds how late the thread sees `stop`).
const POLL: Duration = Duration::from_millis(100);
/// How long a topic's end may stay put while records beyond it wait (this process's
/// own appends, acknowledged) before the consumer is sent back to re-read from the end.
/// Another process's record normally arrives within one fetch interval of ours.
const GAP_PATIENCE: Duration = Duration::from_millis(500);

/// What [`Follower::read`] found.
pub(super) enum CacheRead {
    /// The records of the range the cache holds (empty past the end).
    Hit(Vec<Fetched>),
    /// The range starts below the cache: read it from the broker.
    Miss,
}

struct Shared {
    cache: Mutex<Cache>,
    /// The cache's end: the offset after the last contiguous record.
    end: watch::Sender<u64>,
}

impl Shared {
    fn cache(&self) -> MutexGuard<'_, Cache> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn publish(&self, end: u64) {
        self.end.send_if_modified(|known| {
            let moved = end > *known;
            if moved {
                *known = end;
            }
            moved
        });
    }
}

struct Hub {
    consumer: BaseConsumer<Quiet>,
    topics: RwLock<HashMap<String, Arc<Shared>>>,
    /// Serializes changes of the assignment.
    assigning: Mutex<()>,
    stop: AtomicBool,
}

/// The one consumer of a log and the topics it follows. Stops when dropped.
pub(super) struct Followers {
    hub: Arc<Hub>,
}

impl Followers {
    /// Creates the consumer and starts its thread; no topic is followed yet.
    pub(super) fn start(brokers: &str) -> Result<Followers, KafkaError> {
        let consumer: BaseConsumer<Quiet> =
            consumer_config(brokers, false, FETCH_WAIT_MS).create_with_context(Quiet)?;
        let hub = Arc::new(Hub {
            consumer,
            topics: RwLock::new(HashMap::new()),
            assigning: Mutex::new(()),
            stop: AtomicBool::new(false),
        });
        let polled = hub.clone();
        std::thread::Builder::new()
            .name("kafka-follow".into())
            .spawn(move || follow(&polled))
            .map_err(|e| KafkaError::ClientCreation(format!("follower thread: {e}")))?;
        Ok(Followers { hub })
    }

    /// Follows partition 0 of `topic` from the end of `cache` (the topic as read up to
    /// its end by the opener), added to the assignment on its own: the topics already
    /// followed are not touched. (Re-assigning every topic at its cache's end, as this
    /// once did, could lose records of a busy topic: its fetch went on from where it
    /// was while the records between the cache's end and there, fetched but not yet
    /// consumed, were dropped with the old assignment — and the cache waited for them
    /// for good. `follow` below re-reads such a gap should one open anyway.)
    pub(super) fn follow(&self, topic: &str, cache: Cache) -> Result<Follower, KafkaError> {
        let _assigning = self.hub.assigning.lock().unwrap_or_else(|p| p.into_inner());
        let end = cache.end();
        let shared = Arc::new(Shared {
            end: watch::Sender::new(end),
            cache: Mutex::new(cache),
        });
        let mut topics = self.hub.topics.write().unwrap_or_else(|p| p.into_inner());
        topics.insert(topic.to_owned(), shared.clone());
        let mut assignment = TopicPartitionList::new();
        let offset = Offset::Offset(i64::try_from(end).unwrap_or(i64::MAX));
        assignment.add_partition_offset(topic, 0, offset)?;
        let assigned = self.hub.consumer.incremental_assign(&assignment);
        if assigned.is_err() {
            topics.remove(topic);
        }
        assigned?;
        tracing::debug!(topic, from = end, "kafka follower: following");
        Ok(Follower { shared })
    }
}

impl Drop for Followers {
    fn drop(&mut self) {
        self.hub.stop.store(true, Ordering::Release);
    }
}

/// The follower of one topic (see the module docs).
pub(super) struct Follower {
    shared: Arc<Shared>,
}

impl Follower {
    /// The offset after the last record known.
    pub(super) fn end(&self) -> u64 {
        *self.shared.end.borrow()
    }

    /// A receiver of the end, for waiting on growth.
    pub(super) fn subscribe(&self) -> watch::Receiver<u64> {
        self.shared.end.subscribe()
    }

    /// The epoch marker at offset 0, once read or written.
    pub(super) fn head(&self) -> Option<Fetched> {
        self.shared.cache().head.clone()
    }

    /// Forgets the cached records from `offset` on, as if the consumer, already past
    /// them, had never delivered them (see [`super::KafkaLog::forget_followed_from`]).
    pub(super) fn forget_from(&self, offset: u64) {
        let end = {
            let mut cache = self.shared.cache();
            cache.truncate(offset);
            cache.end()
        };
        self.shared.end.send_replace(end);
    }

    /// Enters records this process appended, as acknowledged by the broker.
    pub(super) fn acked(&self, records: Vec<Fetched>) {
        let end = {
            let mut cache = self.shared.cache();
            for record in records {
                cache.acked(record);
            }
            cache.end()
        };
        self.shared.publish(end);
    }

    /// Records with `from <= offset <= to`, at most `limit`, if the cache still holds
    /// `from`. Past the end: an empty hit.
    pub(super) fn read(&self, from: u64, to: Option<u64>, limit: usize) -> CacheRead {
        let cache = self.shared.cache();
        if from < cache.floor {
            return CacheRead::Miss;
        }
        let skip = usize::try_from(from - cache.floor).unwrap_or(usize::MAX);
        if skip >= cache.records.len() {
            return CacheRead::Hit(Vec::new());
        }
        CacheRead::Hit(
            cache
                .records
                .range(skip..)
                .take_while(|r| to.is_none_or(|to| r.offset <= to))
                .take(limit)
                .cloned()
                .collect(),
        )
    }
}

/// The consumer's loop: consume, cache, publish the ends, until stopped; now and then
/// re-read the gaps that keep records aside ([`Gaps`]).
fn follow(hub: &Hub) {
    let mut gaps = Gaps::default();
    while !hub.stop.load(Ordering::Acquire) {
        gaps.check(hub);
        match hub.consumer.poll(POLL) {
            None => {}
            // Not signalled (`enable.partition.eof` is off); harmless if it were.
            Some(Err(e)) if is_end_of_partition(&e) => {}
            Some(Err(e)) => {
                tracing::warn!(error = %e, "kafka follower: consume error; retrying");
            }
            Some(Ok(message)) => {
                let topics = hub.topics.read().unwrap_or_else(|p| p.into_inner());
                let Some(shared) = topics.get(message.topic()) else {
                    continue;
                };
                let Some(record) = Fetched::of(&message) else {
                    continue;
                };
                let end = {
                    let mut cache = shared.cache();
                    cache.followed(record);
                    cache.end()
                };
                shared.publish(end);
            }
        }
    }
    tracing::debug!("kafka follower stopped");
}

/// Gaps the follower watches: a topic whose cache keeps acknowledged records aside
/// (beyond its end) while the end does not move. The records before them were
/// appended by another process and the consumer should have delivered them; if the
/// end stays put for [`GAP_PATIENCE`], the consumer is sent back to the end to read
/// them again (logged). Without this, a record the consumer never delivered held back
/// every later read of the topic — the kernel waited out its request timeout on each
/// append (`docs/performance.md`, "A gap the follower waited on").
#[derive(Default)]
struct Gaps {
    /// Per topic: the end it was stuck at, and since when.
    stuck: HashMap<String, (u64, Instant)>,
    checked: Option<Instant>,
}

impl Gaps {
    fn check(&mut self, hub: &Hub) {
        let now = Instant::now();
        if self.checked.is_some_and(|at| now.duration_since(at) < POLL) {
            return;
        }
        self.checked = Some(now);
        let mut reread = Vec::new();
        {
            let topics = hub.topics.read().unwrap_or_else(|p| p.into_inner());
            self.stuck.retain(|topic, _| topics.contains_key(topic));
            for (topic, shared) in topics.iter() {
                let (end, waiting) = {
                    let cache = shared.cache();
                    (cache.end(), cache.waiting())
                };
                if waiting == 0 {
                    self.stuck.remove(topic);
                    continue;
                }
                match self.stuck.get(topic) {
                    Some(&(at, since)) if at == end => {
                        if now.duration_since(since) >= GAP_PATIENCE {
                            reread.push((topic.clone(), end, waiting));
                        }
                    }
                    _ => {
                        self.stuck.insert(topic.clone(), (end, now));
                    }
                }
            }
        }
        // The topics lock is let go first: `follow` takes the assignment lock, then it.
        let _assigning = hub.assigning.lock().unwrap_or_else(|p| p.into_inner());
        for (topic, end, waiting) in reread {
            let offset = Offset::Offset(i64::try_from(end).unwrap_or(i64::MAX));
            match hub.consumer.seek(&topic, 0, offset, POLL) {
                Ok(()) => tracing::warn!(
                    topic = %topic,
                    end,
                    waiting,
                    "kafka follower: records before this process's own did not arrive; reading the topic again from its end"
                ),
                Err(e) => {
                    tracing::warn!(topic = %topic, end, error = %e, "kafka follower: cannot re-read a gap; retrying");
                }
            }
            self.stuck.insert(topic, (end, now));
        }
    }
}
