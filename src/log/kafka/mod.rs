//! The Kafka backend: one single-partition topic `<prefix>.<stream>` per stream.
//!
//! - Topics are created on first use with one partition (admin client).
//! - **Epoch marker.** Offset 0 of every topic holds a marker record (header
//!   `orchestrata-epoch-marker`, value = an Avro `kernel.events` / `epoch_marked` event,
//!   [`EpochMarked`], carrying a new UUID; older topics hold the bare UUID text, still
//!   read): the stream's epoch, written by the
//!   process that found the topic empty. Events start at offset 1, and the sequence a user
//!   sees is `offset - 1`, so sequences still start at 0 with no gaps. A recreated topic
//!   gets a new marker, hence a new epoch. The marker is written by the process whose
//!   CreateTopics call created the topic; every other process opening it waits for that
//!   marker (split roles open every stream at once, and a second marker would take
//!   offset 1, so the stream's first event would be sequence 1). A topic found empty
//!   that this process did not create (its creator stopped before the marker, or
//!   topics created by hand) gets a marker from whoever waited the request timeout
//!   first; processes opening such a topic at the same moment can still each write
//!   one.
//! - Appends go through one idempotent producer (`acks=all`, `enable.idempotence=true`,
//!   `message.timeout.ms` = the configured delivery timeout): a broker that stalls can
//!   make appends fail with [`LogError::AppendTimeout`] but never duplicates or reorders
//!   acknowledged records.
//! - Reads near the end of a stream, tails and bounds are answered by the topic's
//!   [`Follower`](follow::Follower): the log's one long-lived consumer reads every open
//!   partition as it grows and keeps its newest records in memory; its end wakes every
//!   tail. A record this process appended is readable as soon as the broker acknowledged
//!   it. Older ranges are read with a one-off consumer ([`fetch`]). The end is learnt by
//!   reading to the end of the partition, never from ListOffsets (wrong on tansu).
//! - Retention is logical: reads and tails below `max(last+1-max_events, first record
//!   younger than max_age)` answer [`LogError::Truncated`], as do reads below the
//!   records the broker still holds. Topics are created to keep every record and
//!   checked when they already exist ([`topics`]).
//! - No Kafka client logs an ordinary event (the end of a partition) as an error
//!   ([`quiet`]).

mod append;
mod cache;
mod fetch;
mod follow;
mod quiet;
mod topics;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use orchestrata_schemas::events::{codec, Event, Stream};
use rdkafka::admin::AdminClient;
use rdkafka::config::ClientConfig;
use rdkafka::error::KafkaError;
use rdkafka::producer::{FutureProducer, Producer};

use self::cache::Cache;
use self::fetch::{FetchError, FetchResult};
use self::follow::{CacheRead, Follower, Followers};
use self::quiet::Quiet;
use super::raw::{Bounds, RawEntry, RawLog, TailFeed};
use super::LogError;
use crate::log::config::{LogConfig, RetentionPolicy, TopicSettings};

/// How many records one cold fetch round reads while scanning (open, retention).
const SCAN_CHUNK: usize = 50_000;

struct TopicState {
    topic: String,
    epoch: String,
    /// Reads the partition as it grows; holds its newest records and its end.
    follower: Follower,
    /// First offset kept by age retention (1 = everything).
    age_floor: AtomicU64,
    /// Serializes enqueueing so a batch lands contiguously.
    enqueue: Mutex<()>,
}

impl TopicState {
    /// Offset after the last record known (marker included): next sequence + 1.
    fn end(&self) -> u64 {
        self.follower.end()
    }
}

struct Inner {
    brokers: String,
    prefix: String,
    delivery_timeout: Duration,
    request_timeout: Duration,
    /// Replaced when the broker fences it (see `renew_producer`).
    producer: RwLock<FutureProducer<Quiet>>,
    producer_config: ClientConfig,
    admin: AdminClient<Quiet>,
    /// Open topics: read on every call, written once per stream.
    topics: RwLock<HashMap<Stream, Arc<TopicState>>>,
    /// Held while a topic is being opened, so it is opened once.
    opening: tokio::sync::Mutex<()>,
    /// The one consumer following every open topic.
    followers: Followers,
    retention: HashMap<Stream, RetentionPolicy>,
    /// How topics are created and checked.
    topic_settings: TopicSettings,
}

/// The Kafka-backed log. Cheap to clone.
#[derive(Clone)]
pub struct KafkaLog {
    inner: Arc<Inner>,
}

impl KafkaLog {
    /// Fault injection for tests: this process's follower of `stream` forgets the
    /// records from `offset` on while its consumer stays past them — what a consumer
    /// that skipped records leaves behind. The follower must notice the gap before its
    /// next append of `stream` waits out the request timeout, and read them again. Not
    /// for use outside tests.
    #[doc(hidden)]
    pub async fn forget_followed_from(&self, stream: Stream, offset: u64) -> Result<(), LogError> {
        self.state(stream).await?.follower.forget_from(offset);
        Ok(())
    }

    /// Connects to `config`'s brokers (the backend must be [`Backend::Kafka`](crate::log::config::Backend::Kafka);
    /// otherwise `brokers` is taken as given). Topics are created lazily on first use.
    pub fn connect(brokers: &str, config: &LogConfig) -> Result<Self, LogError> {
        let kafka = |operation: &'static str| {
            move |e: KafkaError| LogError::Kafka {
                operation,
                topic: "-".into(),
                reason: e.to_string(),
            }
        };
        let delivery_ms = config.delivery_timeout.as_millis().to_string();
        let request_ms = config.request_timeout.as_millis().to_string();
        let mut producer_config = ClientConfig::new();
        producer_config
            .set("bootstrap.servers", brokers)
            .set("enable.idempotence", "true")
            .set("acks", "all")
            .set("message.timeout.ms", &delivery_ms)
            .set("request.timeout.ms", &request_ms)
            // Appends of concurrent commands share a produce request; a lone append
            // waits at most this long for company.
            .set("linger.ms", "1")
            .set("log_level", "3");
        let producer = producer_config
            .create_with_context(Quiet)
            .map_err(kafka("create producer"))?;
        let admin = ClientConfig::new()
            .set("bootstrap.servers", brokers)
            .set("log_level", "3")
            .create_with_context(Quiet)
            .map_err(kafka("create admin client"))?;
        let followers = Followers::start(brokers).map_err(kafka("create follower"))?;
        Ok(KafkaLog {
            inner: Arc::new(Inner {
                brokers: brokers.to_owned(),
                prefix: config.topic_prefix.clone(),
                delivery_timeout: config.delivery_timeout,
                request_timeout: config.request_timeout,
                producer: RwLock::new(producer),
                producer_config,
                admin,
                topics: RwLock::new(HashMap::new()),
                opening: tokio::sync::Mutex::new(()),
                followers,
                retention: config.retention.iter().map(|(s, p)| (*s, *p)).collect(),
                topic_settings: config.topics.clone(),
            }),
        })
    }

    fn producer(&self) -> FutureProducer<Quiet> {
        self.inner
            .producer
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The topic name of `stream`.
    pub fn topic(&self, stream: Stream) -> String {
        format!("{}.{}", self.inner.prefix, stream.as_str())
    }

    /// A cold read: a one-off consumer on a blocking thread.
    async fn fetch(
        &self,
        stream: Stream,
        topic: &str,
        from: u64,
        to: Option<u64>,
        limit: usize,
    ) -> Result<FetchResult, LogError> {
        let brokers = self.inner.brokers.clone();
        let topic_owned = topic.to_owned();
        let timeout = self.inner.request_timeout;
        let result = tokio::task::spawn_blocking(move || {
            fetch::fetch(&brokers, &topic_owned, from, to, limit, timeout)
        })
        .await
        .map_err(|e| LogError::Task(format!("kafka fetch task: {e}")))?;
        result.map_err(|e| match e {
            FetchError::Timeout => self.unreachable(stream, "read"),
            // Offsets are sequences + 1 (offset 0 is the epoch marker).
            FetchError::Truncated { first } => LogError::Truncated {
                stream,
                requested: from.saturating_sub(1),
                first: first.saturating_sub(1),
            },
            FetchError::Kafka(e) => LogError::Kafka {
                operation: "read",
                topic: topic.to_owned(),
                reason: e.to_string(),
            },
        })
    }

    fn unreachable(&self, stream: Stream, operation: &'static str) -> LogError {
        LogError::Unreachable {
            operation,
            stream,
            brokers: self.inner.brokers.clone(),
            timeout_ms: duration_ms(self.inner.request_timeout),
        }
    }

    /// Records with `from <= offset <= to` (offsets), at most `limit`: from the
    /// follower's cache when it holds `from`, else from the broker (only below the
    /// known end, where a fetch always gets an answer).
    async fn range(
        &self,
        stream: Stream,
        state: &TopicState,
        from: u64,
        to: Option<u64>,
        limit: usize,
    ) -> Result<Vec<fetch::Fetched>, LogError> {
        if let CacheRead::Hit(records) = state.follower.read(from, to, limit) {
            return Ok(records);
        }
        let end = state.end();
        if from >= end {
            return Ok(Vec::new());
        }
        let last = end - 1;
        let to = Some(to.map_or(last, |t| t.min(last)));
        Ok(self
            .fetch(stream, &state.topic, from, to, limit)
            .await?
            .records)
    }

    /// The open state of `stream`, opening it on first use.
    async fn state(&self, stream: Stream) -> Result<Arc<TopicState>, LogError> {
        if let Some(state) = self.open_state(stream) {
            return Ok(state);
        }
        let _opening = self.inner.opening.lock().await;
        if let Some(state) = self.open_state(stream) {
            return Ok(state);
        }
        let state = Arc::new(self.open(stream).await?);
        self.inner
            .topics
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(stream, state.clone());
        Ok(state)
    }

    fn open_state(&self, stream: Stream) -> Option<Arc<TopicState>> {
        self.inner
            .topics
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&stream)
            .cloned()
    }

    /// Opens a stream: creates its topic, reads it to the end of its partition (seeding
    /// the follower's cache), follows it from there, reads (or writes) the epoch marker.
    async fn open(&self, stream: Stream) -> Result<TopicState, LogError> {
        let topic = self.topic(stream);
        let (admin, settings) = (&self.inner.admin, &self.inner.topic_settings);
        let timeout = self.inner.request_timeout;
        let created = topics::create(admin, &topic, settings, timeout).await?;
        topics::check(admin, &self.inner.brokers, &topic, settings, timeout).await?;
        let mut cache = Cache::default();
        let mut cursor = 0;
        loop {
            let result = match self.fetch(stream, &topic, cursor, None, SCAN_CHUNK).await {
                Err(LogError::Truncated { first, .. }) if cursor == 0 => {
                    return Err(LogError::Corrupt {
                        stream,
                        sequence: 0,
                        reason: format!(
                            "the broker deleted the topic's records below offset {}, its epoch marker with them (topic retention or DeleteRecords): the stream's history is incomplete; restore it, or start on a new topic prefix",
                            first + 1
                        ),
                    })
                }
                other => other?,
            };
            if let Some(last) = result.records.last() {
                cursor = last.offset + 1;
            }
            for record in result.records {
                cache.followed(record);
            }
            if result.end.is_some() {
                break;
            }
        }
        // `follow` assigns the consumer (a blocking librdkafka call) under the
        // followers' locks: never on a runtime worker, whose stall would stop every
        // other task of the process (a gateway's handshakes included).
        let (inner, followed) = (self.inner.clone(), topic.clone());
        let follower =
            tokio::task::spawn_blocking(move || inner.followers.follow(&followed, cache))
                .await
                .map_err(|e| LogError::Task(format!("follow task for {topic}: {e}")))?
                .map_err(|e| LogError::Kafka {
                    operation: "follow",
                    topic: topic.clone(),
                    reason: e.to_string(),
                })?;
        let mut state = TopicState {
            topic,
            epoch: String::new(),
            follower,
            age_floor: AtomicU64::new(1),
            enqueue: Mutex::new(()),
        };
        if state.end() == 0 {
            // The process that created the topic writes its marker. Every other one
            // (split roles open every stream at once) waits for that marker: a second
            // marker would take offset 1 and push the stream's first event past
            // sequence 0. Only if none comes (its creator stopped in between, or the
            // topic was made empty by hand) does this process write one.
            if created || self.wait_for_end(stream, &state, 1).await.is_err() {
                if !created {
                    tracing::warn!(topic = %state.topic, "an empty topic this process did not create got no epoch marker in time; writing one");
                }
                self.write_marker(stream, &state).await?;
            }
        }
        state.epoch = match state.follower.head() {
            Some(record) => marker_epoch(stream, &record)?,
            None => {
                return Err(LogError::Corrupt {
                    stream,
                    sequence: 0,
                    reason: format!(
                        "topic {} has records but offset 0 cannot be read",
                        state.topic
                    ),
                })
            }
        };
        Ok(state)
    }

    /// The first offset reads may start at, after retention.
    fn first_offset(&self, stream: Stream, state: &TopicState) -> u64 {
        let end = state.end();
        let mut first = state.age_floor.load(Ordering::Acquire).max(1);
        if let Some(max) = self.inner.retention.get(&stream).and_then(|p| p.max_events) {
            first = first.max(end.saturating_sub(max.max(1)));
        }
        // The newest record is always kept.
        first.min(end.saturating_sub(1).max(1))
    }

    fn check_retained(
        &self,
        stream: Stream,
        state: &TopicState,
        from: u64,
    ) -> Result<(), LogError> {
        let end = state.end();
        let first = self.first_offset(stream, state);
        if end > 1 && from + 1 < first {
            return Err(LogError::Truncated {
                stream,
                requested: from,
                first: first - 1,
            });
        }
        Ok(())
    }
}

fn marker_epoch(stream: Stream, record: &fetch::Fetched) -> Result<String, LogError> {
    if !record.is_marker {
        return Err(LogError::Corrupt {
            stream,
            sequence: 0,
            reason: "the topic's first record is not an Orchestrata epoch marker (topic written by something else?)".into(),
        });
    }
    // Today's marker: an `EpochMarked` event. Before it: the bare epoch UUID as text
    // (topics written by older versions keep reading).
    if let Ok(decoded) = codec::decode(&record.value) {
        if let Event::EpochMarked(m) = decoded.event {
            return Ok(m.epoch);
        }
    }
    Ok(String::from_utf8_lossy(&record.value).into_owned())
}

fn duration_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

fn to_entry(record: fetch::Fetched) -> RawEntry {
    RawEntry {
        sequence: record.offset - 1,
        key: record
            .key
            .map(|k| String::from_utf8_lossy(&k).into_owned())
            .unwrap_or_default(),
        value: record.value,
        stored_at_ms: record.timestamp_ms,
    }
}

#[async_trait::async_trait]
impl RawLog for KafkaLog {
    async fn append_raw(
        &self,
        stream: Stream,
        entries: Vec<(String, Vec<u8>)>,
    ) -> Result<u64, LogError> {
        match self.try_append(stream, &entries).await {
            Err(append::Fenced::Yes(_)) => {
                self.renew_producer(stream, &self.topic(stream))?;
                self.try_append(stream, &entries)
                    .await
                    .map_err(append::Fenced::into_error)
            }
            other => other.map_err(append::Fenced::into_error),
        }
    }

    async fn read_raw(
        &self,
        stream: Stream,
        from: u64,
        to: Option<u64>,
        limit: usize,
    ) -> Result<Vec<RawEntry>, LogError> {
        if let Some(to) = to {
            if from > to {
                return Err(LogError::InvalidRange { stream, from, to });
            }
        }
        let state = self.state(stream).await?;
        self.check_retained(stream, &state, from)?;
        let from_offset = from.saturating_add(1);
        let to_offset = to.map(|t| t.saturating_add(1));
        let records = self
            .range(stream, &state, from_offset, to_offset, limit)
            .await?;
        Ok(records
            .into_iter()
            .filter(|r| to_offset.is_none_or(|t| r.offset <= t) && !r.is_marker)
            .take(limit)
            .map(to_entry)
            .collect())
    }

    async fn bounds(&self, stream: Stream) -> Result<Bounds, LogError> {
        let state = self.state(stream).await?;
        let end = state.end();
        if end <= 1 {
            return Ok(Bounds::default());
        }
        Ok(Bounds {
            first: Some(self.first_offset(stream, &state) - 1),
            last: Some(end - 2),
        })
    }

    async fn epoch(&self, stream: Stream) -> Result<String, LogError> {
        Ok(self.state(stream).await?.epoch.clone())
    }

    async fn tail_feed(&self, stream: Stream, from: u64) -> Result<TailFeed, LogError> {
        let state = self.state(stream).await?;
        self.check_retained(stream, &state, from)?;
        // The next sequence is the end offset - 1 (offset 0 is the marker).
        let (visible, ends) = tokio::sync::watch::channel(state.end().saturating_sub(1));
        let mut end = state.follower.subscribe();
        tokio::spawn(async move {
            loop {
                let next = end.borrow_and_update().saturating_sub(1);
                visible.send_if_modified(|v| std::mem::replace(v, next) != next);
                tokio::select! {
                    _ = visible.closed() => return,
                    changed = end.changed() => if changed.is_err() { return },
                }
            }
        });
        Ok(TailFeed {
            log: Arc::new(self.clone()),
            visible: ends,
        })
    }

    async fn enforce_retention(&self, stream: Stream) -> Result<Option<u64>, LogError> {
        let state = self.state(stream).await?;
        let end = state.end();
        if end <= 1 {
            return Ok(None);
        }
        if let Some(age) = self.inner.retention.get(&stream).and_then(|p| p.max_age()) {
            let cutoff =
                now_ms().saturating_sub(i64::try_from(age.as_millis()).unwrap_or(i64::MAX));
            let mut cursor = self.first_offset(stream, &state);
            'scan: while cursor + 1 < end {
                let records = self
                    .range(stream, &state, cursor, Some(end - 2), SCAN_CHUNK)
                    .await?;
                if records.is_empty() {
                    break;
                }
                for record in records {
                    if record.timestamp_ms >= cutoff {
                        break 'scan;
                    }
                    cursor = record.offset + 1;
                }
            }
            state.age_floor.fetch_max(cursor, Ordering::AcqRel);
        }
        Ok(Some(self.first_offset(stream, &state) - 1))
    }

    async fn flush(&self) -> Result<(), LogError> {
        let producer = self.producer();
        let timeout = self.inner.delivery_timeout;
        tokio::task::spawn_blocking(move || producer.flush(timeout))
            .await
            .map_err(|e| LogError::Task(format!("kafka flush task: {e}")))?
            .map_err(|e| LogError::Kafka {
                operation: "flush",
                topic: "-".into(),
                reason: e.to_string(),
            })
    }

    fn location(&self) -> String {
        format!(
            "kafka {} (topics {}.<stream>)",
            self.inner.brokers, self.inner.prefix
        )
    }
}
