//! The packet body: structured JSON or raw bytes.

use base64::engine::{GeneralPurpose, GeneralPurposeConfig};
use base64::{alphabet, Engine};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::error::CxpError;

/// Largest JSON payload accepted, in bytes of its compact encoding (10 MB).
pub const MAX_JSON_PAYLOAD_BYTES: usize = 10 * 1024 * 1024;
/// Largest binary payload accepted, in bytes (100 MB).
pub const MAX_BINARY_PAYLOAD_BYTES: usize = 100 * 1024 * 1024;

/// Standard alphabet, padded; decoding tolerates non-zero trailing bits so acceptance is
/// exactly the padded-base64 pattern of the JSON Schema.
const BASE64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_allow_trailing_bits(true),
);

/// What a packet carries.
///
/// In JSON a [`Payload::Json`] is written as-is (it must be an object or an array) and a
/// [`Payload::Binary`] as a standard base64 string; a JSON string payload therefore always
/// means "bytes", and the packet must then name their `content_type`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Payload {
    /// Structured content: a JSON object or array (nested, any Unicode).
    Json(serde_json::Value),
    /// Opaque bytes; the packet's `content_type` says what they are.
    Binary(Vec<u8>),
}

impl Payload {
    /// True for a JSON payload.
    pub fn is_json(&self) -> bool {
        matches!(self, Payload::Json(_))
    }

    /// True for a binary payload.
    pub fn is_binary(&self) -> bool {
        matches!(self, Payload::Binary(_))
    }

    /// The JSON content, or an error naming `payload` when the payload is binary.
    pub fn as_json(&self) -> Result<&serde_json::Value, CxpError> {
        match self {
            Payload::Json(v) => Ok(v),
            Payload::Binary(_) => Err(CxpError::invalid("payload", "payload is binary, not JSON")),
        }
    }

    /// The bytes, or an error naming `payload` when the payload is JSON.
    pub fn as_binary(&self) -> Result<&[u8], CxpError> {
        match self {
            Payload::Binary(b) => Ok(b),
            Payload::Json(_) => Err(CxpError::invalid("payload", "payload is JSON, not binary")),
        }
    }

    /// Encode bytes the way they travel inside JSON (standard base64, padded).
    pub fn encode_base64(bytes: &[u8]) -> String {
        BASE64.encode(bytes)
    }

    /// Decode a JSON-borne binary payload, naming `payload` on malformed base64.
    pub fn decode_base64(text: &str) -> Result<Vec<u8>, CxpError> {
        BASE64
            .decode(text)
            .map_err(|e| CxpError::invalid("payload", format!("invalid base64: {e}")))
    }

    /// Interpret a JSON value as a payload: objects/arrays are JSON, strings are base64
    /// bytes; `null`, numbers and booleans are refused.
    pub fn from_json_value(value: serde_json::Value) -> Result<Payload, CxpError> {
        match value {
            serde_json::Value::Object(_) | serde_json::Value::Array(_) => Ok(Payload::Json(value)),
            serde_json::Value::String(s) => Ok(Payload::Binary(Self::decode_base64(&s)?)),
            serde_json::Value::Null => {
                Err(CxpError::invalid("payload", "payload must not be null"))
            }
            other => Err(CxpError::invalid(
                "payload",
                format!(
                    "payload must be a JSON object or array, or a base64 string for bytes; got {}",
                    json_type_name(&other)
                ),
            )),
        }
    }
}

/// The JSON type name of a value, as JSON Schema spells it.
pub(crate) fn json_type_name(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "boolean",
        serde_json::Value::Number(n) if n.is_f64() => "number",
        serde_json::Value::Number(_) => "integer",
        serde_json::Value::String(_) => "string",
        serde_json::Value::Array(_) => "array",
        serde_json::Value::Object(_) => "object",
    }
}

impl From<serde_json::Value> for Payload {
    fn from(v: serde_json::Value) -> Self {
        Payload::Json(v)
    }
}

impl From<Vec<u8>> for Payload {
    fn from(v: Vec<u8>) -> Self {
        Payload::Binary(v)
    }
}

impl Serialize for Payload {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Payload::Json(v) => v.serialize(s),
            Payload::Binary(b) => s.serialize_str(&Self::encode_base64(b)),
        }
    }
}

impl<'de> Deserialize<'de> for Payload {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        Payload::from_json_value(v).map_err(serde::de::Error::custom)
    }
}
