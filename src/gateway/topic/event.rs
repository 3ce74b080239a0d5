//! One log event as the gateway pushes it: serialized once, shared by every subscriber.
//!
//! The notification frame is
//!
//! ```json
//! {"jsonrpc":"2.0","method":"cxp.traffic","params":{"topic":"cxp.traffic","sequence":42,
//!  "epoch":"…","timestamp":"2026-03-28T14:30:22Z","source":"kernel","event_type":"packet_sent",
//!  "event_id":"…","key":"…","command_id":null,"principal":null,"payload":{…}}}
//! ```
//!
//! `sequence` and `epoch` are the log's: `(epoch, sequence)` is the position a client
//! resumes from. The frame text is built once per event and handed to every matching
//! subscriber as a reference-counted [`Utf8Bytes`]; only a subscription with a
//! `max_payload_size` smaller than the payload gets its own, truncated rendering.

use std::sync::Arc;

use axum::extract::ws::Utf8Bytes;
use orchestrata_schemas::events::{Envelope, Stream};
use serde_json::{json, Value};

use super::facts::Facts;

/// A log event ready to push.
#[derive(Debug, Clone)]
pub struct TopicEvent {
    /// Its topic.
    pub stream: Stream,
    /// Its log sequence.
    pub sequence: u64,
    /// What filters look at.
    pub facts: Facts,
    /// The event (shared with the log's other live tails when the hub read it).
    pub envelope: Arc<Envelope>,
    /// Its payload's JSON text.
    payload: String,
    /// The whole notification frame, untruncated.
    pub frame: Utf8Bytes,
}

fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

impl TopicEvent {
    /// Serializes `envelope` once, with the `facts` filters match it on (from
    /// [`FilterIndex`](super::facts::FilterIndex), or
    /// [`facts_of`](super::facts::facts_of) over a settled index).
    pub fn new(
        envelope: impl Into<Arc<Envelope>>,
        facts: Facts,
    ) -> Result<Self, serde_json::Error> {
        let envelope = envelope.into();
        let payload = serde_json::to_string(&envelope.record.event)?;
        let frame = Utf8Bytes::from(render(&envelope, &payload, false));
        Ok(TopicEvent {
            stream: envelope.stream,
            sequence: envelope.sequence,
            facts,
            envelope,
            payload,
            frame,
        })
    }

    /// Size of the payload's JSON in bytes.
    pub fn payload_len(&self) -> usize {
        self.payload.len()
    }

    /// The notification frame for a subscription truncating payloads above `max`.
    pub fn frame_for(&self, max: Option<usize>) -> Utf8Bytes {
        match max {
            Some(max) if self.payload.len() > max => {
                Utf8Bytes::from(render(&self.envelope, &truncated(&self.payload, max), true))
            }
            _ => self.frame.clone(),
        }
    }

    /// The notification's `params` as a JSON value (for `gateway.replay` results).
    pub fn params(&self, max: Option<usize>) -> Value {
        let (payload, cut) = match max {
            Some(max) if self.payload.len() > max => (truncated(&self.payload, max), true),
            _ => (self.payload.clone(), false),
        };
        let e = &self.envelope;
        let payload: Value = serde_json::from_str(&payload).unwrap_or(Value::Null);
        let mut v = json!({
            "topic": e.stream.as_str(),
            "sequence": e.sequence,
            "epoch": e.epoch,
            "timestamp": e.record.timestamp.to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
            "source": e.record.source,
            "event_type": e.record.event.event_type(),
            "event_id": e.record.event_id.to_string(),
            "key": e.record.key,
            "command_id": e.record.command_id.map(|c| c.to_string()),
            "principal": e.record.principal,
            "payload": payload,
        });
        if cut {
            v["truncated"] = Value::Bool(true);
        }
        v
    }
}

/// A truncated payload: `{"truncated":true,"size_bytes":N,"preview":"<first bytes>"}`.
fn truncated(payload: &str, max: usize) -> String {
    let mut end = max.min(payload.len());
    while end > 0 && !payload.is_char_boundary(end) {
        end -= 1;
    }
    json!({
        "truncated": true,
        "size_bytes": payload.len(),
        "preview": &payload[..end],
    })
    .to_string()
}

fn render(e: &Envelope, payload: &str, cut: bool) -> String {
    let topic = e.stream.as_str();
    let command = e
        .record
        .command_id
        .map_or_else(|| "null".to_owned(), |c| quoted(&c.to_string()));
    let principal = e
        .record
        .principal
        .as_deref()
        .map_or_else(|| "null".to_owned(), quoted);
    format!(
        concat!(
            r#"{{"jsonrpc":"2.0","method":"{topic}","params":{{"topic":"{topic}","sequence":{seq},"#,
            r#""epoch":{epoch},"timestamp":"{ts}","source":{source},"event_type":"{etype}","#,
            r#""event_id":"{id}","key":{key},"command_id":{command},"principal":{principal},{cut}"payload":{payload}}}}}"#
        ),
        topic = topic,
        seq = e.sequence,
        epoch = quoted(&e.epoch),
        ts = e
            .record
            .timestamp
            .to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
        source = quoted(&e.record.source),
        etype = e.record.event.event_type(),
        id = e.record.event_id,
        key = quoted(&e.record.key),
        command = command,
        principal = principal,
        cut = if cut { r#""truncated":true,"# } else { "" },
        payload = payload,
    )
}
