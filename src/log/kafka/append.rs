//! Appends: one idempotent producer for the whole process, batches enqueued
//! contiguously, acknowledged records entered into the topic's follower cache.

use std::time::Duration;

use orchestrata_schemas::events::kernel::EpochMarked;
use orchestrata_schemas::events::{codec, EventRecord, Stream};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{DeliveryFuture, FutureRecord};

use super::fetch::{Fetched, MARKER_HEADER};
use super::{duration_ms, now_ms, KafkaLog, TopicState};
use crate::log::LogError;

/// An append failure, and whether the broker fenced the producer before storing any of it.
pub(super) enum Fenced {
    Yes(LogError),
    No(LogError),
}

impl Fenced {
    pub(super) fn into_error(self) -> LogError {
        match self {
            Fenced::Yes(e) | Fenced::No(e) => e,
        }
    }
}

impl KafkaLog {
    /// After message timeouts an idempotent producer bumps its epoch; some brokers (tansu)
    /// answer the next produce with `ProducerFenced`, which makes the producer unusable.
    /// A fenced produce was refused, so a fresh producer (new producer id) may resend it.
    pub(super) fn renew_producer(&self, stream: Stream, topic: &str) -> Result<(), LogError> {
        let fresh = self
            .inner
            .producer_config
            .create_with_context(super::quiet::Quiet)
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

    pub(super) fn append_error(&self, stream: Stream, topic: &str, e: KafkaError) -> LogError {
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

    /// Writes the epoch marker of an empty topic and waits until offset 0 (ours, or
    /// another process's written first) is in the follower's cache.
    pub(super) async fn write_marker(
        &self,
        stream: Stream,
        state: &TopicState,
    ) -> Result<(), LogError> {
        let topic = &state.topic;
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
                epoch,
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
        let offset = u64::try_from(delivery.offset).unwrap_or(0);
        state.follower.acked(vec![Fetched {
            offset,
            key: Some(MARKER_HEADER.as_bytes().to_vec()),
            value: payload,
            timestamp_ms: delivery.timestamp.to_millis().unwrap_or_else(now_ms),
            is_marker: true,
        }]);
        // Whoever wrote first, offset 0 is the epoch: wait until the follower holds it.
        self.wait_for_end(stream, state, offset + 1).await
    }

    /// Waits until the follower's contiguous end passes `end` (records of another
    /// process lie before it), bounded by the request timeout.
    pub(super) async fn wait_for_end(
        &self,
        stream: Stream,
        state: &TopicState,
        end: u64,
    ) -> Result<(), LogError> {
        let mut known = state.follower.subscribe();
        let reached = tokio::time::timeout(
            self.inner.request_timeout,
            known.wait_for(|known| *known >= end),
        )
        .await;
        match reached {
            Ok(Ok(_)) => Ok(()),
            _ => Err(LogError::Unreachable {
                operation: "read",
                stream,
                brokers: self.inner.brokers.clone(),
                timeout_ms: duration_ms(self.inner.request_timeout),
            }),
        }
    }

    pub(super) async fn try_append(
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
        let mut acked = Vec::with_capacity(entries.len());
        let mut failure = None;
        let mut fenced = false;
        let results = futures::future::join_all(deliveries).await;
        for (delivery, (key, value)) in results.into_iter().zip(entries) {
            match delivery {
                Ok(Ok(done)) => acked.push(Fetched {
                    offset: u64::try_from(done.offset).unwrap_or(0),
                    key: Some(key.as_bytes().to_vec()),
                    value: value.clone(),
                    timestamp_ms: done.timestamp.to_millis().unwrap_or_else(now_ms),
                    is_marker: false,
                }),
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
        let first = acked.first().map(|r| r.offset);
        let last = acked.last().map(|r| r.offset);
        state.follower.acked(acked);
        if let Some(e) = failure {
            // Only a batch refused as a whole may be resent.
            return Err(if fenced && first.is_none() {
                Fenced::Yes(e)
            } else {
                Fenced::No(e)
            });
        }
        if let Some(last) = last {
            // Read-your-write: a record of another process before ours must be read
            // first (usually it already is: the end passed `last` when we entered it).
            // The append itself is durable: a follower that lags is reported, not
            // turned into a failure a caller would retry (and so duplicate).
            if let Err(e) = self.wait_for_end(stream, &state, last + 1).await {
                // Where the follower stopped says which record it is missing.
                let read_to = state.follower.end();
                tracing::warn!(%stream, appended_offset = last, read_to, error = %e, "appended, but this process has not read the records before it yet");
            }
        }
        match first {
            Some(offset) if offset >= 1 => Ok(offset - 1),
            Some(_) => Err(Fenced::No(LogError::Corrupt {
                stream,
                sequence: 0,
                reason: "an event landed at offset 0, where the epoch marker belongs".into(),
            })),
            None => Ok(state.follower.end().saturating_sub(1)),
        }
    }
}
