//! [`Quiet`]: the client context of every Kafka client the log creates.
//!
//! rdkafka's default context logs every consumer error event at ERROR, including
//! `PartitionEOF`, which only says "you have read everything there is": an ordinary
//! event a reader at the end of a partition meets after each catch-up. It also maps
//! librdkafka's own level 3 (transient transport errors it retries by itself) to ERROR.
//! Here the end of a partition is a trace line, and what librdkafka recovers from is a
//! warning; failures that reach a caller come back as typed [`LogError`](crate::log::LogError)s.

use rdkafka::client::ClientContext;
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::consumer::ConsumerContext;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};

/// Client context that keeps ordinary Kafka events out of the ERROR log.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Quiet;

impl ClientContext for Quiet {
    fn log(&self, level: RDKafkaLogLevel, fac: &str, message: &str) {
        match level {
            RDKafkaLogLevel::Emerg | RDKafkaLogLevel::Alert | RDKafkaLogLevel::Critical => {
                tracing::error!(target: "librdkafka", "librdkafka: {fac} {message}")
            }
            RDKafkaLogLevel::Error | RDKafkaLogLevel::Warning => {
                tracing::warn!(target: "librdkafka", "librdkafka: {fac} {message}")
            }
            RDKafkaLogLevel::Notice | RDKafkaLogLevel::Info => {
                tracing::info!(target: "librdkafka", "librdkafka: {fac} {message}")
            }
            RDKafkaLogLevel::Debug => {
                tracing::debug!(target: "librdkafka", "librdkafka: {fac} {message}")
            }
        }
    }

    fn error(&self, error: KafkaError, reason: &str) {
        if is_end_of_partition(&error) {
            tracing::trace!(target: "librdkafka", "end of partition: {reason}");
        } else if is_fatal(&error) {
            tracing::error!(target: "librdkafka", "librdkafka: {error}: {reason}");
        } else {
            tracing::warn!(target: "librdkafka", "librdkafka: {error}: {reason}");
        }
    }
}

impl ConsumerContext for Quiet {}

/// Whether `error` only reports that a reader reached the end of its partition.
pub(super) fn is_end_of_partition(error: &KafkaError) -> bool {
    matches!(error, KafkaError::PartitionEOF(_))
        || error.rdkafka_error_code() == Some(RDKafkaErrorCode::PartitionEOF)
}

/// Whether `error` leaves the client unusable (librdkafka recovers from the others).
pub(super) fn is_fatal(error: &KafkaError) -> bool {
    matches!(error, KafkaError::MessageConsumptionFatal(_))
        || error.rdkafka_error_code() == Some(RDKafkaErrorCode::Fatal)
}
