//! Blocking range reads of one single-partition topic by assign + seek: the cold path,
//! for ranges older than what the topic's [`Follower`](super::follow::Follower) keeps.
//!
//! The end of a partition is found with the fetch's end-of-partition signal, never with
//! ListOffsets: some Kafka-protocol brokers (tansu) answer ListOffsets with a wrong high
//! watermark. A fetch positioned beyond the end of a partition gets no answer at all from
//! such brokers, so callers only ever start fetches at or below an end they observed.

use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::{Headers, Message};
use rdkafka::{Offset, TopicPartitionList};

use super::quiet::{is_end_of_partition, is_fatal, Quiet};

/// Header set on the epoch marker record at offset 0 of every topic.
pub(super) const MARKER_HEADER: &str = "orchestrata-epoch-marker";

/// One record as fetched.
#[derive(Clone)]
pub(super) struct Fetched {
    pub offset: u64,
    pub key: Option<Vec<u8>>,
    pub value: Vec<u8>,
    pub timestamp_ms: i64,
    pub is_marker: bool,
}

/// What a fetch saw.
pub(super) struct FetchResult {
    pub records: Vec<Fetched>,
    /// The offset after the partition's last record, if the fetch reached the end.
    pub end: Option<u64>,
}

/// Why a fetch failed.
pub(super) enum FetchError {
    /// No record and no end-of-partition arrived within the timeout.
    Timeout,
    /// The client or broker reported an error.
    Kafka(KafkaError),
    /// The partition starts after the requested offset: the broker deleted the records
    /// below `first` (retention, DeleteRecords). A consumer positioned below the log
    /// start is moved to the earliest record (`auto.offset.reset`); this is how that
    /// shows, and it must not pass for the records asked for.
    Truncated {
        /// The first record the partition still holds.
        first: u64,
    },
}

/// Consumer settings shared by range reads and the follower. With `eof`, reaching the
/// end of a partition is signalled (a cold read stops there; the follower learns that a
/// topic is caught up); `wait_ms` is how long the broker may hold an empty fetch, hence
/// how late a follower sees another process's append.
pub(super) fn consumer_config(brokers: &str, eof: bool, wait_ms: u32) -> ClientConfig {
    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", brokers)
        .set("group.id", "orchestrata-log-reader")
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("enable.partition.eof", if eof { "true" } else { "false" })
        .set("auto.offset.reset", "earliest")
        .set("fetch.wait.max.ms", wait_ms.to_string())
        .set("log_level", "3");
    config
}

/// Reads records of `topic` partition 0 with `from <= offset <= to`, at most `limit`,
/// stopping early at the end of the partition. `timeout` bounds the wait between two
/// signs of progress.
pub(super) fn fetch(
    brokers: &str,
    topic: &str,
    from: u64,
    to: Option<u64>,
    limit: usize,
    timeout: Duration,
) -> Result<FetchResult, FetchError> {
    let consumer: BaseConsumer<Quiet> = consumer_config(brokers, true, 10)
        .create_with_context(Quiet)
        .map_err(FetchError::Kafka)?;
    let mut assignment = TopicPartitionList::new();
    let start = i64::try_from(from).unwrap_or(i64::MAX);
    assignment
        .add_partition_offset(topic, 0, Offset::Offset(start))
        .map_err(FetchError::Kafka)?;
    consumer.assign(&assignment).map_err(FetchError::Kafka)?;

    let mut records = Vec::new();
    let mut next = from;
    let mut deadline = Instant::now() + timeout;
    // The last error librdkafka reported and is recovering from, told if the deadline
    // passes before it has (a bare timeout would hide why).
    let mut recovering: Option<KafkaError> = None;
    while records.len() < limit && to.is_none_or(|to| next <= to) {
        let wait = deadline.saturating_duration_since(Instant::now());
        if wait.is_zero() {
            return Err(recovering.map_or(FetchError::Timeout, FetchError::Kafka));
        }
        match consumer.poll(wait.min(Duration::from_millis(100))) {
            None => {}
            Some(Err(e)) if is_end_of_partition(&e) => {
                return Ok(FetchResult {
                    records,
                    end: Some(next),
                })
            }
            Some(Err(e)) if is_fatal(&e) => return Err(FetchError::Kafka(e)),
            // Transport errors (`AllBrokersDown` on a busy broker, a dropped connection)
            // are reports: librdkafka reconnects and fetches again by itself, so the
            // read waits for it within its deadline rather than failing at once.
            Some(Err(e)) => recovering = Some(e),
            Some(Ok(message)) => {
                let Some(record) = Fetched::of(&message) else {
                    continue;
                };
                if message.topic() != topic || record.offset < next {
                    continue;
                }
                if records.is_empty() && next == from && record.offset > from {
                    return Err(FetchError::Truncated {
                        first: record.offset,
                    });
                }
                deadline = Instant::now() + timeout;
                recovering = None;
                next = record.offset + 1;
                records.push(record);
            }
        }
    }
    Ok(FetchResult { records, end: None })
}

impl Fetched {
    /// Copies a consumed message out of the client's buffers (`None` for a message
    /// without an offset).
    pub(super) fn of(message: &impl Message) -> Option<Fetched> {
        let offset = u64::try_from(message.offset()).ok()?;
        let is_marker = message
            .headers()
            .is_some_and(|h| h.iter().any(|header| header.key == MARKER_HEADER));
        Some(Fetched {
            offset,
            key: message.key().map(<[u8]>::to_vec),
            value: message.payload().map(<[u8]>::to_vec).unwrap_or_default(),
            timestamp_ms: message.timestamp().to_millis().unwrap_or(0),
            is_marker,
        })
    }
}
