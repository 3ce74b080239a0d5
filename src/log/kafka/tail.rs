//! Kafka tails: a dedicated consumer assigned at the start offset, forwarding records in
//! offset order. One consumer reads one partition in order, so the seam between stored
//! and live records has no gap and no duplicate by construction.

use std::time::Duration;

use futures::StreamExt;
use orchestrata_schemas::events::Stream;
use rdkafka::consumer::{Consumer, StreamConsumer};
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};
use tokio::sync::mpsc;

use super::fetch::consumer_config;
use crate::log::raw::{RawEntry, RawTail};
use crate::log::LogError;

/// Starts a tail of `topic` delivering records with offset >= `from_offset`. The consumer
/// is positioned at `start_offset` (at most the partition's observed end, because a fetch
/// beyond the end gets no answer from some brokers) and skips what lies before `from_offset`.
pub(super) fn spawn_tail(
    brokers: &str,
    topic: String,
    stream: Stream,
    start_offset: u64,
    from_offset: u64,
) -> Result<RawTail, LogError> {
    let kafka_err = |e: rdkafka::error::KafkaError| LogError::Kafka {
        operation: "tail",
        topic: topic.clone(),
        reason: e.to_string(),
    };
    let consumer: StreamConsumer = consumer_config(brokers, false)
        .create()
        .map_err(kafka_err)?;
    let mut assignment = TopicPartitionList::new();
    assignment
        .add_partition_offset(
            &topic,
            0,
            Offset::Offset(i64::try_from(start_offset).unwrap_or(i64::MAX)),
        )
        .map_err(kafka_err)?;
    consumer.assign(&assignment).map_err(kafka_err)?;

    let (tx, rx) = mpsc::channel::<Result<RawEntry, LogError>>(1024);
    tokio::spawn(async move {
        loop {
            let received = tokio::select! {
                _ = tx.closed() => break,
                received = tokio::time::timeout(Duration::from_secs(1), consumer.recv()) => received,
            };
            let item = match received {
                Err(_idle) => continue,
                Ok(Err(e)) => Err(LogError::Kafka {
                    operation: "tail",
                    topic: topic.clone(),
                    reason: e.to_string(),
                }),
                Ok(Ok(message)) => {
                    let Ok(offset) = u64::try_from(message.offset()) else {
                        continue;
                    };
                    if offset < from_offset || offset == 0 {
                        continue;
                    }
                    Ok(RawEntry {
                        sequence: offset - 1,
                        key: message
                            .key()
                            .map(|k| String::from_utf8_lossy(k).into_owned())
                            .unwrap_or_default(),
                        value: message.payload().map(<[u8]>::to_vec).unwrap_or_default(),
                        stored_at_ms: message.timestamp().to_millis().unwrap_or(0),
                    })
                }
            };
            let failed = item.is_err();
            if tx.send(item).await.is_err() || failed {
                break;
            }
        }
        tracing::debug!(%stream, "kafka tail stopped");
    });
    Ok(futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    })
    .boxed())
}
