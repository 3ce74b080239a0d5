//! Helpers of the unit tests: envelopes built by hand.

use chrono::{DateTime, Duration, TimeZone, Utc};
use orchestrata_schemas::cxp::{DeliveryStatus, WorkStatus};
use orchestrata_schemas::events::fields::Json;
use orchestrata_schemas::events::types::{Packet, PacketPayload};
use orchestrata_schemas::events::{Envelope, Event, EventRecord};
use uuid::Uuid;

/// 2026-01-01T00:00:00Z plus `secs` seconds.
pub fn t(secs: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap() + Duration::seconds(secs)
}

/// The envelope of `event` at `sequence` of its stream, at time `t(secs)`.
pub fn env(sequence: u64, secs: i64, event: impl Into<Event>) -> Envelope {
    let event = event.into();
    Envelope {
        stream: event.stream(),
        sequence,
        epoch: "test".into(),
        record: EventRecord {
            event_id: Uuid::from_u128(u128::from(sequence) + 1),
            timestamp: t(secs),
            source: "test".into(),
            key: "k".into(),
            command_id: None,
            principal: None,
            event,
        },
    }
}

/// A queued, pending packet.
pub fn packet(id: u128, thread: &str, from: &str, to: &str, priority: i32) -> Packet {
    Packet {
        message_id: Uuid::from_u128(id),
        from_agent: from.into(),
        to_agent: to.into(),
        thread_id: thread.into(),
        subject: format!("subject {id}"),
        payload: PacketPayload::Json(serde_json::json!({"n": id as u64}).into()),
        created_at: t(0),
        priority,
        delivery_status: DeliveryStatus::Queued,
        work_status: WorkStatus::Pending,
        protocol_version: "1.0.0".into(),
        in_reply_to: None,
        metadata: Json::default(),
    }
}

/// The JSON of a view (the byte-for-byte comparison form).
pub fn json<V: serde::Serialize>(view: &V) -> String {
    serde_json::to_string(view).unwrap()
}
