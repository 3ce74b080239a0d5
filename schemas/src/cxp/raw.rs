//! Decoding side of the codecs: a lenient wire shape whose fields are checked one by one,
//! so every rejection names the field (serde's own errors only give a line and column).

use std::borrow::Cow;
use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use uuid::Uuid;

use super::alias::VolkAlias;
use super::error::CxpError;
use super::field::Field;
use super::packet::CxpPacket;
use super::payload::{json_type_name, Payload};
use super::priority::Priority;
use super::tracking::Tracking;
use super::validate::fields;
use super::version::parse_version;

/// A packet as it arrives, before any field is trusted. `P` is the payload's wire shape
/// (its JSON text in JSON, a frame in MessagePack, a `Value` when read from a `Value`). Unknown fields are ignored.
///
/// The text fields are [`Field`]s, borrowed from the input where the format allows, so
/// the happy path allocates only for `thread_id` and `subject` (which the packet keeps).
#[derive(Debug, Deserialize)]
pub(crate) struct RawPacket<'a, P> {
    #[serde(default, borrow, deserialize_with = "present")]
    pub message_id: Option<Field<'a>>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub from_agent: Option<Field<'a>>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub to_agent: Option<Field<'a>>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub thread_id: Option<Field<'a>>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub subject: Option<Field<'a>>,
    pub payload: Option<P>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub timestamp: Option<Field<'a>>,
    #[serde(default, deserialize_with = "present")]
    pub priority: Option<Value>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub delivery_status: Option<Field<'a>>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub work_status: Option<Field<'a>>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub protocol_version: Option<Field<'a>>,
    #[serde(default, deserialize_with = "present")]
    pub metadata: Option<Value>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub content_type: Option<Field<'a>>,
    #[serde(default, deserialize_with = "present")]
    pub tracking: Option<Value>,
}

/// A packet's payload as it sits in the packet's JSON text: borrowed, its syntax checked
/// while skipping it, not parsed. A syntax error inside it carries [`PAYLOAD_ERROR_MARK`]
/// so that [`payload_json_error`] can name `payload` instead of only a line and column.
pub(crate) struct PayloadText<'a>(pub &'a RawValue);

/// Prefix of the message of a syntax error inside the payload.
const PAYLOAD_ERROR_MARK: &str = "invalid JSON in `payload`: ";

impl<'de: 'a, 'a> Deserialize<'de> for PayloadText<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <&'a RawValue>::deserialize(d)
            .map(PayloadText)
            .map_err(|e| serde::de::Error::custom(format_args!("{PAYLOAD_ERROR_MARK}{e}")))
    }
}

/// The error of decoding a packet's JSON text: an [`CxpError::InvalidField`] naming
/// `payload` when the payload's own text is malformed, else a document-level
/// [`CxpError::Decode`].
pub(crate) fn payload_json_error(e: serde_json::Error) -> CxpError {
    let text = e.to_string();
    match text.strip_prefix(PAYLOAD_ERROR_MARK) {
        Some(inner) => CxpError::invalid("payload", format!("invalid JSON: {inner}")),
        None => CxpError::Decode {
            format: "json",
            reason: text,
        },
    }
}

/// Deserialize a present field as `Some(value)`, keeping an explicit `null` as
/// `Some(null)` (plain `Option` would turn it into "absent").
fn present<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

fn required<T>(v: Option<T>, field: &'static str) -> Result<T, CxpError> {
    // Not `ok_or`: that builds (and drops) the error for every present field.
    match v {
        Some(v) => Ok(v),
        None => Err(CxpError::MissingField(field)),
    }
}

fn string<'a>(v: Field<'a>, field: &'static str) -> Result<Cow<'a, str>, CxpError> {
    match v {
        Field::Str(s) => Ok(s),
        Field::Other(other) => Err(CxpError::invalid(
            field,
            format!("expected a string, got {}", json_type_name(&other)),
        )),
    }
}

/// An integer value of a JSON number, accepting `5.0` as JSON Schema does.
pub(crate) fn integral(n: &serde_json::Number) -> Option<i64> {
    n.as_i64().or_else(|| {
        n.as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 1e15)
            .map(|f| f as i64)
    })
}

/// Parse `message_id`: the canonical hyphenated UUID form (36 characters) only.
pub(crate) fn parse_uuid(s: &str) -> Result<Uuid, CxpError> {
    let parsed = if s.len() == 36 {
        Uuid::try_parse(s).ok()
    } else {
        None
    };
    parsed.ok_or_else(|| {
        CxpError::invalid(
            "message_id",
            format!("`{s}` is not a hyphenated UUID (8-4-4-4-12 hex digits)"),
        )
    })
}

/// Parse `timestamp`: RFC 3339 (the internet profile of ISO 8601) with `T` and an offset.
pub(crate) fn parse_timestamp(s: &str) -> Result<DateTime<Utc>, CxpError> {
    let bad = |why: String| {
        CxpError::invalid(
            "timestamp",
            format!("`{s}` is not an ISO 8601 date-time like 2026-01-15T10:30:00Z: {why}"),
        )
    };
    if s.as_bytes().get(10) != Some(&b'T') {
        return Err(bad("the date and time must be separated by `T`".into()));
    }
    DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| bad(e.to_string()))
}

impl<P> RawPacket<'_, P> {
    /// Check every field and build the packet; `payload` turns the wire payload into a
    /// [`Payload`]. The result passes [`CxpPacket::validate`]: the per-field checks run
    /// here as each field is read, then the payload, cross-field and review checks.
    pub fn into_packet(
        self,
        payload: impl FnOnce(P) -> Result<Payload, CxpError>,
    ) -> Result<CxpPacket, CxpError> {
        let message_id = string(required(self.message_id, "message_id")?, "message_id")?;
        let message_id = parse_uuid(&message_id)?;
        let from_agent = string(required(self.from_agent, "from_agent")?, "from_agent")?;
        let from_agent = VolkAlias::parse_field(&from_agent, "from_agent")?;
        let to_agent = string(required(self.to_agent, "to_agent")?, "to_agent")?;
        let to_agent = VolkAlias::parse_field(&to_agent, "to_agent")?;
        let thread_id = string(required(self.thread_id, "thread_id")?, "thread_id")?;
        fields::thread_id(&thread_id)?;
        let thread_id = thread_id.into_owned();
        let subject = string(required(self.subject, "subject")?, "subject")?;
        fields::subject(&subject)?;
        let subject = subject.into_owned();
        let payload = payload(required(self.payload, "payload")?)?;
        let timestamp = string(required(self.timestamp, "timestamp")?, "timestamp")?;
        let timestamp = parse_timestamp(&timestamp)?;
        let priority = match self.priority {
            None => Priority::default(),
            Some(Value::Number(n)) => match integral(&n) {
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
            None => BTreeMap::new(),
            Some(Value::Object(m)) => m.into_iter().collect(),
            Some(other) => {
                return Err(CxpError::invalid(
                    "metadata",
                    format!("expected an object, got {}", json_type_name(&other)),
                ))
            }
        };
        let content_type = match self.content_type {
            None => None,
            Some(v) => {
                let c = string(v, "content_type")?;
                fields::content_type(&c)?;
                Some(c.into_owned())
            }
        };
        let tracking = match self.tracking {
            None => Tracking::default(),
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
        // Subject, thread id and content type were checked above: of
        // `CxpPacket::validate_fields` only the payload rule is left.
        fields::payload(&packet.payload)?;
        packet.validate_cross_fields()?;
        super::review::validate_review_payload(&packet)?;
        Ok(packet)
    }
}

impl TryFrom<RawPacket<'_, Value>> for CxpPacket {
    type Error = CxpError;
    fn try_from(raw: RawPacket<'_, Value>) -> Result<Self, Self::Error> {
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
