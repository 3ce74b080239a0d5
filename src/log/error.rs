//! The log's typed errors.

use orchestrata_schemas::events::Stream;

/// Everything that can go wrong when appending to or reading from the log.
///
/// Each variant names the stream (or path, or broker) involved and the reason, so a
/// message printed by the CLI or returned by the gateway is actionable on its own.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// An existing Kafka topic is set to delete old records, which an event store must
    /// not do (see `log.kafka_topics`).
    #[error("kafka topic {topic} deletes its history ({settings}): once the broker deletes its first record (the epoch marker) the log cannot open, and older events are gone. Keep it: `kafka-configs.sh --bootstrap-server {brokers} --alter --entity-type topics --entity-name {topic} --add-config retention.ms=-1,retention.bytes=-1,cleanup.policy=delete`; or accept it with `log.kafka_topics.accept_deleting_history: true`")]
    DeletesHistory {
        /// The topic.
        topic: String,
        /// Its settings that delete records, e.g. `retention.ms=604800000`.
        settings: String,
        /// The bootstrap servers (for the command in the message).
        brokers: String,
    },
    /// A read or tail asked for events that retention has already removed.
    #[error("stream {stream}: sequence {requested} was removed by retention; the first retained sequence is {first}")]
    Truncated {
        /// The stream read.
        stream: Stream,
        /// The sequence asked for.
        requested: u64,
        /// The first sequence still stored.
        first: u64,
    },
    /// A range whose start lies after its end.
    #[error("stream {stream}: invalid range, from {from} is after to {to}")]
    InvalidRange {
        /// The stream read.
        stream: Stream,
        /// Start of the range (inclusive).
        from: u64,
        /// End of the range (inclusive).
        to: u64,
    },
    /// A batch append whose records belong to different streams.
    #[error("batch append: record {index} belongs to stream {found}, but the batch is for {expected}; a batch must target one stream")]
    MixedStreams {
        /// Index of the offending record in the batch.
        index: usize,
        /// The stream of the first record.
        expected: Stream,
        /// The stream of the offending record.
        found: Stream,
    },
    /// The data directory is held by another process (sled takes an exclusive lock).
    #[error("data directory {path} is locked by another process (is an `orchestrata up` running on it?): {reason}")]
    Locked {
        /// The data directory.
        path: String,
        /// What the operating system said.
        reason: String,
    },
    /// The embedded store failed.
    #[error("sled storage at {path}: {source}")]
    Sled {
        /// The data directory.
        path: String,
        /// The underlying error.
        #[source]
        source: sled::Error,
    },
    /// A Kafka operation failed.
    #[error("kafka {operation} on topic {topic}: {reason}")]
    Kafka {
        /// What was being done: "create topic", "append", "read", ...
        operation: &'static str,
        /// The topic involved.
        topic: String,
        /// What the client library or broker said.
        reason: String,
    },
    /// An append did not complete within the configured delivery timeout. The event may
    /// or may not have been stored; it was not acknowledged.
    #[error("append to stream {stream} was not acknowledged within {timeout_ms} ms (broker {brokers} not answering?): {reason}")]
    AppendTimeout {
        /// The stream appended to.
        stream: Stream,
        /// The configured delivery timeout.
        timeout_ms: u64,
        /// The configured brokers.
        brokers: String,
        /// What the client library said.
        reason: String,
    },
    /// A read did not complete in time because the broker did not answer.
    #[error(
        "{operation} on stream {stream} got no answer from broker {brokers} within {timeout_ms} ms"
    )]
    Unreachable {
        /// What was being done.
        operation: &'static str,
        /// The stream involved.
        stream: Stream,
        /// The configured brokers.
        brokers: String,
        /// The configured request timeout.
        timeout_ms: u64,
    },
    /// A stored record could not be understood (wrong layout or undecodable event).
    #[error("stream {stream}: stored record at sequence {sequence} is corrupt: {reason}")]
    Corrupt {
        /// The stream read.
        stream: Stream,
        /// The record's sequence.
        sequence: u64,
        /// Why it could not be read.
        reason: String,
    },
    /// An event could not be encoded for storage.
    #[error("stream {stream}: cannot encode event {event_id}: {reason}")]
    Encode {
        /// The stream appended to.
        stream: Stream,
        /// The event's id.
        event_id: uuid::Uuid,
        /// Why the codec refused it.
        reason: String,
    },
    /// A background task of the log died.
    #[error("log background task failed: {0}")]
    Task(String),
}

impl LogError {
    /// Wraps a sled error, recognising the "database is locked" case.
    pub(crate) fn sled(path: &std::path::Path, source: sled::Error) -> Self {
        let path = path.display().to_string();
        match &source {
            sled::Error::Io(io) if io.to_string().contains("could not acquire lock") => {
                LogError::Locked {
                    path,
                    reason: io.to_string(),
                }
            }
            _ => LogError::Sled { path, source },
        }
    }
}
