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
use std::time::Duration;

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
    /// its end by the opener). The topics already followed keep their positions
    /// (re-assigned at their caches' ends).
    pub(super) fn follow(&self, topic: &str, cache: Cache) -> Result<Follower, KafkaError> {
        let _assigning = self.hub.assigning.lock().unwrap_or_else(|p| p.into_inner());
        let shared = Arc::new(Shared {
            end: watch::Sender::new(cache.end()),
            cache: Mutex::new(cache),
        });
        let mut topics = self.hub.topics.write().unwrap_or_else(|p| p.into_inner());
        topics.insert(topic.to_owned(), shared.clone());
        let mut assignment = TopicPartitionList::new();
        for (name, followed) in topics.iter() {
            let end = i64::try_from(followed.cache().end()).unwrap_or(i64::MAX);
            assignment.add_partition_offset(name, 0, Offset::Offset(end))?;
        }
        let assigned = self.hub.consumer.assign(&assignment);
        if assigned.is_err() {
            topics.remove(topic);
        }
        assigned?;
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

/// The consumer's loop: consume, cache, publish the ends, until stopped.
fn follow(hub: &Hub) {
    while !hub.stop.load(Ordering::Acquire) {
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
