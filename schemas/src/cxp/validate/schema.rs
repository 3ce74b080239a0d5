//! The packet's JSON Schema (`schemas/json/cxp-packet.schema.json`) and a hand-written
//! structural check equivalent to it.
//!
//! `jsonschema` stays a dev-dependency: it pulls a large dependency tree (regex engines,
//! a reference resolver) into every crate that speaks CXP, and the schema is small enough
//! that [`validate_document`] checks exactly the same constraints in a few microseconds.
//! The test suite proves the two agree on generated documents.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::super::alias::VolkAlias;
use super::super::error::CxpError;
use super::super::payload::{json_type_name, Payload};
use super::super::raw::{integral, parse_timestamp, parse_uuid};
use super::super::tracking::Tracking;
use super::super::version::parse_version;
use super::fields;

/// The JSON Schema text, for tools and clients that validate on their side.
pub const CXP_PACKET_SCHEMA: &str = include_str!("../../../json/cxp-packet.schema.json");

const REQUIRED: [&str; 10] = [
    "message_id",
    "from_agent",
    "to_agent",
    "thread_id",
    "subject",
    "payload",
    "timestamp",
    "delivery_status",
    "work_status",
    "protocol_version",
];

fn str_field<'a>(
    doc: &'a Map<String, Value>,
    field: &'static str,
) -> Result<Option<&'a str>, CxpError> {
    match doc.get(field) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(CxpError::invalid(
            field,
            format!("expected a string, got {}", json_type_name(other)),
        )),
    }
}

/// Check a JSON document against the packet schema without building a packet. Returns
/// the first violation, naming its field. Rules beyond the schema (agents differ, size
/// limits, history consistency, review payloads) are left to [`super::super::CxpPacket::validate`].
pub fn validate_document(doc: &Value) -> Result<(), CxpError> {
    let Value::Object(doc) = doc else {
        return Err(CxpError::invalid(
            "packet",
            format!("expected an object, got {}", json_type_name(doc)),
        ));
    };
    for field in REQUIRED {
        if !doc.contains_key(field) {
            return Err(CxpError::MissingField(field));
        }
    }
    if let Some(s) = str_field(doc, "message_id")? {
        parse_uuid(s)?;
    }
    for field in ["from_agent", "to_agent"] {
        if let Some(s) = str_field(doc, field)? {
            VolkAlias::parse_field(s, field)?;
        }
    }
    if let Some(s) = str_field(doc, "thread_id")? {
        fields::thread_id(s)?;
    }
    if let Some(s) = str_field(doc, "subject")? {
        fields::subject(s)?;
    }
    match doc.get("payload") {
        Some(Value::Object(_) | Value::Array(_)) | None => {}
        Some(Value::String(s)) => {
            Payload::decode_base64(s)?;
            if !doc.contains_key("content_type") {
                return Err(CxpError::invalid(
                    "content_type",
                    "required when the payload is binary",
                ));
            }
        }
        Some(other) => {
            return Err(CxpError::invalid(
                "payload",
                format!(
                    "expected an object, an array or a base64 string, got {}",
                    json_type_name(other)
                ),
            ))
        }
    }
    if let Some(s) = str_field(doc, "timestamp")? {
        parse_timestamp(s)?;
    }
    match doc.get("priority") {
        None => {}
        Some(Value::Number(n)) if integral(n).is_some_and(|p| (0..=10).contains(&p)) => {}
        Some(other) => {
            return Err(CxpError::invalid(
                "priority",
                format!("{other} is not an integer in 0..=10"),
            ))
        }
    }
    if let Some(s) = str_field(doc, "delivery_status")? {
        s.parse::<super::super::DeliveryStatus>()
            .map_err(|r| CxpError::invalid("delivery_status", r))?;
    }
    if let Some(s) = str_field(doc, "work_status")? {
        s.parse::<super::super::WorkStatus>()
            .map_err(|r| CxpError::invalid("work_status", r))?;
    }
    if let Some(s) = str_field(doc, "protocol_version")? {
        super::super::version::check_compatibility(&parse_version(s)?)?;
    }
    if let Some(m) = doc.get("metadata") {
        if !m.is_object() {
            return Err(CxpError::invalid(
                "metadata",
                format!("expected an object, got {}", json_type_name(m)),
            ));
        }
    }
    if let Some(s) = str_field(doc, "content_type")? {
        fields::content_type(s)?;
    }
    if let Some(t) = doc.get("tracking") {
        let t =
            Tracking::deserialize(t).map_err(|e| CxpError::invalid("tracking", e.to_string()))?;
        if t.time_in_progress_ms < 0 {
            return Err(CxpError::invalid(
                "tracking.time_in_progress_ms",
                "must not be negative",
            ));
        }
    }
    Ok(())
}
