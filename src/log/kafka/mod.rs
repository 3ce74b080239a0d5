//! The Kafka backend: one single-partition topic `<prefix>.<stream>` per stream.
//!
//! - Topics are created on first use with one partition (admin client).
//! - **Epoch marker.** Offset 0 of every topic holds a marker record (header
//!   `orchestrata-epoch-marker`, value = an Avro `kernel.events` / `epoch_marked` event,
//!   [`EpochMarked`], carrying a new UUID; older topics hold the bare UUID text, still
//!   read): the stream's epoch, written by the
//!   process that found the topic empty. Events start at offset 1, and the sequence a user
//!   sees is `offset - 1`, so sequences still start at 0 with no gaps. A recreated topic
//!   gets a new marker, hence a new epoch. One writer per stream (architecture.md) keeps
//!   the marker unique.
//! - Appends go through one idempotent producer (`acks=all`, `enable.idempotence=true`,
//!   `message.timeout.ms` = the configured delivery timeout): a broker that stalls can
//!   make appends fail with [`LogError::AppendTimeout`] but never duplicates or reorders
//!   acknowledged records.
//! - Reads assign a consumer at an offset and stop at the fetch's end-of-partition
//!   signal; the end is never taken from ListOffsets (see [`fetch`]).
//! - Retention is logical: reads and tails below `max(last+1-max_events, first record
//!   younger than max_age)` answer [`LogError::Truncated`]; the broker's own topic
//!   retention (not set by Orchestrata) governs physical deletion.

mod fetch;
mod tail;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use orchestrata_schemas::events::kernel::EpochMarked;
use orchestrata_schemas::events::{codec, Event, EventRecord, Stream};
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{DeliveryFuture, FutureProducer, FutureRecord, Producer};

use self::fetch::{FetchError, FetchResult, MARKER_HEADER};
use super::raw::{Bounds, RawEntry, RawLog, RawTail};
use super::LogError;
use crate::config::{LogConfig, RetentionPolicy};

/// How many records one fetch round reads while scanning for the end.
const SCAN_CHUNK: usize = 50_000;

struct TopicState {
    topic: String,
    epoch: String,
    /// Offset after the last record known (marker included): next sequence + 1.
    end: AtomicU64,
    /// First offset kept by age retention (1 = everything).
    age_floor: AtomicU64,
    /// Serializes enqueueing so a batch lands contiguously.
    enqueue: Mutex<()>,
}

struct Inner {
    brokers: String,
    prefix: String,
    delivery_timeout: Duration,
    request_timeout: Duration,
    /// Replaced when the broker fences it (see `renew_producer`).
    producer: std::sync::RwLock<FutureProducer>,
    producer_config: ClientConfig,
    admin: AdminClient<DefaultClientContext>,
    topics: tokio::sync::Mutex<HashMap<Stream, Arc<TopicState>>>,
    retention: HashMap<Stream, RetentionPolicy>,
}

/// The Kafka-backed log. Cheap to clone.
#[derive(Clone)]
pub struct KafkaLog {
    inner: Arc<Inner>,
}

impl KafkaLog {
    /// Connects to `config`'s brokers (the backend must be [`Backend::Kafka`](crate::config::Backend::Kafka);
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
            .set("linger.ms", "1")
            .set("log_level", "3");
        let producer: FutureProducer =
            producer_config.create().map_err(kafka("create producer"))?;
        let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
            .set("bootstrap.servers", brokers)
            .set("log_level", "3")
            .create()
            .map_err(kafka("create admin client"))?;
        Ok(KafkaLog {
            inner: Arc::new(Inner {
                brokers: brokers.to_owned(),
                prefix: config.topic_prefix.clone(),
                delivery_timeout: config.delivery_timeout,
                request_timeout: config.request_timeout,
                producer: std::sync::RwLock::new(producer),
                producer_config,
                admin,
                topics: tokio::sync::Mutex::new(HashMap::new()),
                retention: config.retention.iter().map(|(s, p)| (*s, *p)).collect(),
            }),
        })
    }

    fn producer(&self) -> FutureProducer {
        self.inner
            .producer
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// After message timeouts an idempotent producer bumps its epoch; some brokers (tansu)
    /// answer the next produce with `ProducerFenced`, which makes the producer unusable.
    /// A fenced produce was refused, so a fresh producer (new producer id) may resend it.
    fn renew_producer(&self, stream: Stream, topic: &str) -> Result<(), LogError> {
        let fresh: FutureProducer =
            self.inner
                .producer_config
                .create()
                .map_err(|e| LogError::Kafka {
                    operation: "recreate producer",
                    topic: topic.to_owned(),
                    reason: e.to_string(),
                })?;
        tracing::warn!(%stream, "kafka producer was fenced; replaced it");
        *self
            .inner
            .producer
            .write()
            .unwrap_or_else(|p| p.into_inner()) = fresh;
        Ok(())
    }

    /// The topic name of `stream`.
    pub fn topic(&self, stream: Stream) -> String {
        format!("{}.{}", self.inner.prefix, stream.as_str())
    }

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
            FetchError::Timeout => LogError::Unreachable {
                operation: "read",
                stream,
                brokers: self.inner.brokers.clone(),
                timeout_ms: duration_ms(timeout),
            },
            FetchError::Kafka(e) => LogError::Kafka {
                operation: "read",
                topic: topic.to_owned(),
                reason: e.to_string(),
            },
        })
    }

    /// Reads from `end` to the end of the partition, moving the known end; returns the
    /// records found on the way (those with offset >= `keep_from`).
    async fn refresh_end(
        &self,
        stream: Stream,
        state: &TopicState,
        keep_from: u64,
        limit: usize,
    ) -> Result<Vec<fetch::Fetched>, LogError> {
        let mut kept = Vec::new();
        let mut cursor = state.end.load(Ordering::Acquire);
        loop {
            let result = self
                .fetch(stream, &state.topic, cursor, None, SCAN_CHUNK)
                .await?;
            if let Some(last) = result.records.last() {
                cursor = last.offset + 1;
            }
            for record in result.records {
                if record.offset >= keep_from && kept.len() < limit {
                    kept.push(record);
                }
            }
            if let Some(end) = result.end {
                state.end.fetch_max(end, Ordering::AcqRel);
                return Ok(kept);
            }
        }
    }

    async fn create_topic(&self, topic: &str) -> Result<(), LogError> {
        let new_topic = NewTopic::new(topic, 1, TopicReplication::Fixed(1));
        let options = AdminOptions::new().operation_timeout(Some(self.inner.request_timeout));
        let results = self
            .inner
            .admin
            .create_topics([&new_topic], &options)
            .await
            .map_err(|e| LogError::Kafka {
                operation: "create topic",
                topic: topic.to_owned(),
                reason: e.to_string(),
            })?;
        for result in results {
            match result {
                Ok(_) | Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
                Err((_, code)) => {
                    return Err(LogError::Kafka {
                        operation: "create topic",
                        topic: topic.to_owned(),
                        reason: code.to_string(),
                    })
                }
            }
        }
        Ok(())
    }

    /// Opens a stream: creates its topic, reads or writes its epoch marker, finds its end.
    async fn state(&self, stream: Stream) -> Result<Arc<TopicState>, LogError> {
        let mut topics = self.inner.topics.lock().await;
        if let Some(state) = topics.get(&stream) {
            return Ok(state.clone());
        }
        let topic = self.topic(stream);
        self.create_topic(&topic).await?;
        let head = self.fetch(stream, &topic, 0, Some(0), 1).await?;
        let epoch = match head.records.first() {
            Some(record) => marker_epoch(stream, record)?,
            None => self.write_marker(stream, &topic).await?,
        };
        let state = Arc::new(TopicState {
            topic,
            epoch,
            end: AtomicU64::new(1),
            age_floor: AtomicU64::new(1),
            enqueue: Mutex::new(()),
        });
        self.refresh_end(stream, &state, u64::MAX, 0).await?;
        topics.insert(stream, state.clone());
        Ok(state)
    }

    async fn write_marker(&self, stream: Stream, topic: &str) -> Result<String, LogError> {
        let epoch = uuid::Uuid::new_v4().to_string();
        let headers = OwnedHeaders::new().insert(Header {
            key: MARKER_HEADER,
            value: Some(epoch.as_bytes()),
        });
        // The marker is an event of the vocabulary (`kernel.events` / `epoch_marked`),
        // Avro single-object encoded like every other record, so that a foreign Avro
        // consumer decodes every record of the topic with the published schemas.
        let marker = EventRecord::new(
            "log",
            MARKER_HEADER,
            EpochMarked {
                stream: stream.as_str().to_owned(),
                epoch: epoch.clone(),
            },
            chrono::Utc::now(),
        );
        let payload = codec::encode(&marker).map_err(|e| LogError::Kafka {
            operation: "append",
            topic: topic.to_owned(),
            reason: format!("epoch marker: {e}"),
        })?;
        let record = FutureRecord::to(topic)
            .partition(0)
            .key(MARKER_HEADER)
            .payload(&payload)
            .headers(headers);
        let delivery = self
            .producer()
            .send(record, self.inner.delivery_timeout)
            .await
            .map_err(|(e, _)| self.append_error(stream, topic, e))?;
        if delivery.offset == 0 {
            return Ok(epoch);
        }
        // Another process wrote first: its marker is the epoch.
        let head = self.fetch(stream, topic, 0, Some(0), 1).await?;
        match head.records.first() {
            Some(record) => marker_epoch(stream, record),
            None => Err(LogError::Corrupt {
                stream,
                sequence: 0,
                reason: format!("topic {topic} has records but offset 0 cannot be read"),
            }),
        }
    }

    fn append_error(&self, stream: Stream, topic: &str, e: KafkaError) -> LogError {
        match e.rdkafka_error_code() {
            Some(RDKafkaErrorCode::MessageTimedOut) | Some(RDKafkaErrorCode::RequestTimedOut) => {
                LogError::AppendTimeout {
                    stream,
                    timeout_ms: duration_ms(self.inner.delivery_timeout),
                    brokers: self.inner.brokers.clone(),
                    reason: e.to_string(),
                }
            }
            _ => LogError::Kafka {
                operation: "append",
                topic: topic.to_owned(),
                reason: e.to_string(),
            },
        }
    }

    /// The first offset reads may start at, after retention.
    fn first_offset(&self, stream: Stream, state: &TopicState) -> u64 {
        let end = state.end.load(Ordering::Acquire);
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
        let end = state.end.load(Ordering::Acquire);
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

/// An append failure, and whether the broker fenced the producer before storing any of it.
enum Fenced {
    Yes(LogError),
    No(LogError),
}

impl Fenced {
    fn into_error(self) -> LogError {
        match self {
            Fenced::Yes(e) | Fenced::No(e) => e,
        }
    }
}

impl KafkaLog {
    async fn try_append(
        &self,
        stream: Stream,
        entries: &[(String, Vec<u8>)],
    ) -> Result<u64, Fenced> {
        let state = self.state(stream).await.map_err(Fenced::No)?;
        let mut deliveries: Vec<DeliveryFuture> = Vec::with_capacity(entries.len());
        {
            let _order = state.enqueue.lock().unwrap_or_else(|p| p.into_inner());
            let producer = self.producer();
            for (key, value) in entries {
                let mut record = FutureRecord::to(&state.topic)
                    .partition(0)
                    .key(key.as_str())
                    .payload(value.as_slice());
                let started = std::time::Instant::now();
                loop {
                    match producer.send_result(record) {
                        Ok(delivery) => {
                            deliveries.push(delivery);
                            break;
                        }
                        Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back))
                            if started.elapsed() < self.inner.delivery_timeout =>
                        {
                            record = back;
                            producer.poll(Duration::from_millis(5));
                        }
                        Err((e, _)) => {
                            return Err(Fenced::No(self.append_error(stream, &state.topic, e)))
                        }
                    }
                }
            }
        }
        let mut first = None;
        let mut failure = None;
        let mut fenced = false;
        for delivery in futures::future::join_all(deliveries).await {
            match delivery {
                Ok(Ok(done)) => {
                    let offset = u64::try_from(done.offset).unwrap_or(0);
                    state.end.fetch_max(offset + 1, Ordering::AcqRel);
                    first.get_or_insert(offset);
                }
                Ok(Err((e, _))) => {
                    fenced |= e.rdkafka_error_code() == Some(RDKafkaErrorCode::ProducerFenced);
                    failure.get_or_insert_with(|| self.append_error(stream, &state.topic, e));
                }
                Err(_canceled) => {
                    failure
                        .get_or_insert(LogError::Task("kafka producer dropped a delivery".into()));
                }
            }
        }
        if let Some(e) = failure {
            // Only a batch refused as a whole may be resent.
            return Err(if fenced && first.is_none() {
                Fenced::Yes(e)
            } else {
                Fenced::No(e)
            });
        }
        match first {
            Some(offset) if offset >= 1 => Ok(offset - 1),
            Some(_) => Err(Fenced::No(LogError::Corrupt {
                stream,
                sequence: 0,
                reason: "an event landed at offset 0, where the epoch marker belongs".into(),
            })),
            None => Ok(state.end.load(Ordering::Acquire).saturating_sub(1)),
        }
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
            Err(Fenced::Yes(_)) => {
                self.renew_producer(stream, &self.topic(stream))?;
                self.try_append(stream, &entries)
                    .await
                    .map_err(Fenced::into_error)
            }
            other => other.map_err(Fenced::into_error),
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
        let from_offset = from.saturating_add(1);
        let to_offset = to.map(|t| t.saturating_add(1));
        let known_end = state.end.load(Ordering::Acquire);
        let records = if from_offset < known_end {
            self.check_retained(stream, &state, from)?;
            self.fetch(stream, &state.topic, from_offset, to_offset, limit)
                .await?
                .records
        } else {
            let found = self.refresh_end(stream, &state, from_offset, limit).await?;
            self.check_retained(stream, &state, from)?;
            found
        };
        Ok(records
            .into_iter()
            .filter(|r| to_offset.is_none_or(|t| r.offset <= t) && !r.is_marker)
            .take(limit)
            .map(to_entry)
            .collect())
    }

    async fn bounds(&self, stream: Stream) -> Result<Bounds, LogError> {
        let state = self.state(stream).await?;
        self.refresh_end(stream, &state, u64::MAX, 0).await?;
        let end = state.end.load(Ordering::Acquire);
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

    async fn tail_raw(&self, stream: Stream, from: u64) -> Result<RawTail, LogError> {
        let state = self.state(stream).await?;
        self.refresh_end(stream, &state, u64::MAX, 0).await?;
        self.check_retained(stream, &state, from)?;
        let from_offset = from.saturating_add(1);
        let start = from_offset.min(state.end.load(Ordering::Acquire));
        tail::spawn_tail(
            &self.inner.brokers,
            state.topic.clone(),
            stream,
            start,
            from_offset,
        )
    }

    async fn enforce_retention(&self, stream: Stream) -> Result<Option<u64>, LogError> {
        let state = self.state(stream).await?;
        self.refresh_end(stream, &state, u64::MAX, 0).await?;
        let end = state.end.load(Ordering::Acquire);
        if end <= 1 {
            return Ok(None);
        }
        if let Some(age) = self.inner.retention.get(&stream).and_then(|p| p.max_age()) {
            let cutoff =
                now_ms().saturating_sub(i64::try_from(age.as_millis()).unwrap_or(i64::MAX));
            let mut cursor = self.first_offset(stream, &state);
            'scan: while cursor + 1 < end {
                let result = self
                    .fetch(stream, &state.topic, cursor, Some(end - 2), SCAN_CHUNK)
                    .await?;
                if result.records.is_empty() {
                    break;
                }
                for record in result.records {
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
