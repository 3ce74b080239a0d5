//! Between the packet as the log records it ([`Packet`], Avro-friendly) and the validated
//! [`CxpPacket`] whose state machines the kernel runs.

use orchestrata_schemas::cxp::{
    CxpError, CxpHeaders, CxpPacket, Payload, Priority, VolkAlias, CURRENT_VERSION,
};
use orchestrata_schemas::events::fields::Json;
use orchestrata_schemas::events::types::{BinaryPayload, Packet, PacketPayload};

/// The metadata key that names a packet's session (Article I: every packet carries it).
pub const SESSION_KEY: &str = "session_id";

/// Validates a recorded packet and turns it into a [`CxpPacket`] with `max_retries`.
/// Errors name the offending field.
pub fn to_cxp(packet: &Packet, max_retries: u32) -> Result<CxpPacket, CxpError> {
    let (payload, content_type) = match &packet.payload {
        PacketPayload::Json(text) => (Payload::Json(text.clone()), None),
        PacketPayload::Binary(b) => (
            Payload::Binary(b.data.clone()),
            Some(b.content_type.clone()),
        ),
    };
    let headers = CxpHeaders {
        message_id: packet.message_id,
        from_agent: VolkAlias::parse_field(&packet.from_agent, "from_agent")?,
        to_agent: VolkAlias::parse_field(&packet.to_agent, "to_agent")?,
        thread_id: packet.thread_id.clone(),
        subject: packet.subject.clone(),
        timestamp: packet.created_at,
        priority: Priority::new(i64::from(packet.priority))?,
        delivery_status: packet.delivery_status,
        work_status: packet.work_status,
        protocol_version: packet.protocol_version.clone(),
        content_type,
    };
    let mut cxp = CxpPacket::from_headers(headers, payload)?.with_max_retries(max_retries);
    match &packet.metadata.0 {
        serde_json::Value::Null => {}
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                cxp.metadata_mut().insert(k.clone(), v.clone());
            }
        }
        other => {
            return Err(CxpError::invalid(
                "metadata",
                format!("expected an object, got {other}"),
            ))
        }
    }
    Ok(cxp)
}

/// The session a packet names in its metadata, if any.
pub fn session_of(packet: &CxpPacket) -> Option<String> {
    packet
        .metadata()
        .get(SESSION_KEY)
        .and_then(|v| v.as_str())
        .map(str::to_owned)
}

/// The log's record of a packet (headers, payload, metadata).
pub fn to_record(packet: &CxpPacket, in_reply_to: Option<uuid::Uuid>) -> Packet {
    let payload = match packet.payload() {
        Payload::Json(text) => PacketPayload::Json(text.clone()),
        Payload::Binary(b) => PacketPayload::Binary(BinaryPayload {
            content_type: packet
                .content_type()
                .unwrap_or("application/octet-stream")
                .to_owned(),
            data: b.clone(),
        }),
    };
    let metadata: serde_json::Map<String, serde_json::Value> = packet
        .metadata()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Packet {
        message_id: packet.message_id(),
        from_agent: packet.from_agent().to_string(),
        to_agent: packet.to_agent().to_string(),
        thread_id: packet.thread_id().to_owned(),
        subject: packet.subject().to_owned(),
        payload,
        created_at: packet.timestamp(),
        priority: i32::from(packet.priority().value()),
        delivery_status: packet.delivery_status(),
        work_status: packet.work_status(),
        protocol_version: if packet.protocol_version() == &CURRENT_VERSION {
            CURRENT_VERSION.to_string()
        } else {
            packet.protocol_version().to_string()
        },
        in_reply_to,
        metadata: Json(serde_json::Value::Object(metadata)),
    }
}
