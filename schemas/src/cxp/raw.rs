//! Decoding side of the codecs: a lenient wire shape whose fields are checked one by one,
//! so every rejection names the field (serde's own errors only give a line and column).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::Value;
use uuid::Uuid;

use super::alias::VolkAlias;
use super::error::CxpError;
use super::packet::CxpPacket;
use super::payload::{json_type_name, Payload};
use super::priority::Priority;
use super::tracking::Tracking;
use super::validate::fields;
use super::version::parse_version;

/// A packet as it arrives, before any field is trusted. `P` is the payload's wire shape
/// (a JSON value in JSON, a frame in MessagePack). Unknown fields are ignored.
#[derive(Debug, Deserialize)]
pub(crate) struct RawPacket<P> {
    pub message_id: Option<Value>,
    pub from_agent: Option<Value>,
    pub to_agent: Option<Value>,
    pub thread_id: Option<Value>,
    pub subject: Option<Value>,
    pub payload: Option<P>,
    pub timestamp: Option<Value>,
    pub priority: Option<Value>,
    pub delivery_status: Option<Value>,
    pub work_status: Option<Value>,
    pub protocol_version: Option<Value>,
    pub metadata: Option<Value>,
    pub content_type: Option<Value>,
    pub tracking: Option<Value>,
}

fn required<T>(v: Option<T>, field: &'static str) -> Result<T, CxpError> {
    v.ok_or(CxpError::MissingField(field))
}

fn string(v: Value, field: &'static str) -> Result<String, CxpError> {
    match v {
        Value::String(s) => Ok(s),
        other => Err(CxpError::invalid(
            field,
            format!("expected a string, got {}", json_type_name(&other)),
        )),
    }
}

impl<P> RawPacket<P> {
    /// Check every field and build the packet; `payload` turns the wire payload into a
    /// [`Payload`]. Runs the full [`CxpPacket::validate`] at the end.
    pub fn into_packet(
        self,
        payload: impl FnOnce(P) -> Result<Payload, CxpError>,
    ) -> Result<CxpPacket, CxpError> {
        let message_id = string(required(self.message_id, "message_id")?, "message_id")?;
        let message_id = Uuid::parse_str(&message_id).map_err(|e| {
            CxpError::invalid("message_id", format!("`{message_id}` is not a UUID: {e}"))
        })?;
        let from_agent = string(required(self.from_agent, "from_agent")?, "from_agent")?;
        let from_agent = VolkAlias::parse_field(&from_agent, "from_agent")?;
        let to_agent = string(required(self.to_agent, "to_agent")?, "to_agent")?;
        let to_agent = VolkAlias::parse_field(&to_agent, "to_agent")?;
        let thread_id = string(required(self.thread_id, "thread_id")?, "thread_id")?;
        fields::thread_id(&thread_id)?;
        let subject = string(required(self.subject, "subject")?, "subject")?;
        fields::subject(&subject)?;
        let payload = payload(required(self.payload, "payload")?)?;
        let timestamp = string(required(self.timestamp, "timestamp")?, "timestamp")?;
        let timestamp = DateTime::parse_from_rfc3339(&timestamp)
            .map_err(|e| {
                CxpError::invalid(
                    "timestamp",
                    format!("`{timestamp}` is not an ISO 8601 date-time with offset: {e}"),
                )
            })?
            .with_timezone(&Utc);
        let priority = match self.priority {
            None | Some(Value::Null) => Priority::default(),
            Some(Value::Number(n)) => match n.as_i64() {
                Some(i) => Priority::new(i)?,
                None => {
                    return Err(CxpError::invalid(
                        "priority",
                        format!("{n} is not an integer in 0..=10"),
                    ))
                }
            },
            Some(other) => {
                return Err(CxpError::invalid(
                    "priority",
                    format!("expected an integer, got {}", json_type_name(&other)),
                ))
            }
        };
        let delivery_status = string(
            required(self.delivery_status, "delivery_status")?,
            "delivery_status",
        )?
        .parse()
        .map_err(|reason| CxpError::invalid("delivery_status", reason))?;
        let work_status = string(required(self.work_status, "work_status")?, "work_status")?
            .parse()
            .map_err(|reason| CxpError::invalid("work_status", reason))?;
        let protocol_version = string(
            required(self.protocol_version, "protocol_version")?,
            "protocol_version",
        )?;
        let protocol_version = parse_version(&protocol_version)?;
        let metadata = match self.metadata {
            None | Some(Value::Null) => BTreeMap::new(),
            Some(Value::Object(m)) => m.into_iter().collect(),
            Some(other) => {
                return Err(CxpError::invalid(
                    "metadata",
                    format!("expected an object, got {}", json_type_name(&other)),
                ))
            }
        };
        let content_type = match self.content_type {
            None | Some(Value::Null) => None,
            Some(v) => {
                let c = string(v, "content_type")?;
                fields::content_type(&c)?;
                Some(c)
            }
        };
        let tracking = match self.tracking {
            None | Some(Value::Null) => Tracking::default(),
            Some(v) => Tracking::deserialize(v)
                .map_err(|e| CxpError::invalid("tracking", e.to_string()))?,
        };
        let packet = CxpPacket {
            message_id,
            from_agent,
            to_agent,
            thread_id,
            subject,
            payload,
            timestamp,
            priority,
            delivery_status,
            work_status,
            protocol_version,
            metadata,
            content_type,
            tracking,
        };
        packet.validate()?;
        Ok(packet)
    }
}

impl TryFrom<RawPacket<Value>> for CxpPacket {
    type Error = CxpError;
    fn try_from(raw: RawPacket<Value>) -> Result<Self, Self::Error> {
        raw.into_packet(Payload::from_json_value)
    }
}

impl<'de> Deserialize<'de> for CxpPacket {
    /// Deserializing a packet (from any self-describing format) runs the same checks as
    /// [`CxpPacket::from_json`]; the error text names the field.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = RawPacket::<Value>::deserialize(d)?;
        CxpPacket::try_from(raw).map_err(serde::de::Error::custom)
    }
}
