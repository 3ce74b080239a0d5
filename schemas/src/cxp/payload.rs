//! The packet body: structured JSON or raw bytes.

use base64::engine::{GeneralPurpose, GeneralPurposeConfig};
use base64::{alphabet, Engine};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

use super::error::CxpError;
use super::json_payload::JsonPayload;

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
///
/// A JSON payload is kept as its validated text ([`JsonPayload`]): routing a packet never
/// parses it; [`Payload::json_value`] does, on demand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Payload {
    /// Structured content: a JSON object or array (nested, any Unicode), as text.
    Json(JsonPayload),
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

    /// The JSON content as text, or an error naming `payload` when the payload is binary.
    pub fn as_json(&self) -> Result<&JsonPayload, CxpError> {
        match self {
            Payload::Json(j) => Ok(j),
            Payload::Binary(_) => Err(CxpError::invalid("payload", "payload is binary, not JSON")),
        }
    }

    /// The JSON content parsed into a `Value` (a new tree on every call), or an error
    /// naming `payload` when the payload is binary or cannot be parsed.
    pub fn json_value(&self) -> Result<serde_json::Value, CxpError> {
        self.as_json()?.to_value()
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
            serde_json::Value::Object(_) | serde_json::Value::Array(_) => {
                Ok(Payload::Json(JsonPayload::from_value(&value)))
            }
            serde_json::Value::String(s) => Ok(Payload::Binary(Self::decode_base64(&s)?)),
            serde_json::Value::Null => {
                Err(CxpError::invalid("payload", "payload must not be null"))
            }
            other => Err(wrong_type(json_type_name(&other))),
        }
    }

    /// Interpret a payload's JSON text as it sits in a packet's JSON (the codec's wire
    /// form): an object or array is kept as text, a string is base64 bytes; `null`,
    /// numbers and booleans are refused as in [`Payload::from_json_value`].
    pub fn from_raw_json(raw: &RawValue) -> Result<Payload, CxpError> {
        let text = raw.get().trim_start();
        match text.as_bytes().first() {
            Some(b'{' | b'[') => Ok(Payload::Json(JsonPayload::from_raw(raw))),
            Some(b'"') => {
                let s: String = serde_json::from_str(text)
                    .map_err(|e| CxpError::invalid("payload", format!("invalid string: {e}")))?;
                Ok(Payload::Binary(Self::decode_base64(&s)?))
            }
            Some(b'n') => Err(CxpError::invalid("payload", "payload must not be null")),
            _ => Err(wrong_type(JsonPayload::from_raw(raw).json_type())),
        }
    }
}

fn wrong_type(got: &str) -> CxpError {
    CxpError::invalid(
        "payload",
        format!("payload must be a JSON object or array, or a base64 string for bytes; got {got}"),
    )
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

/// The compact text of `v`; whether it is an object or array is checked when a packet
/// is built ([`super::validate::fields::payload`]).
impl From<serde_json::Value> for Payload {
    fn from(v: serde_json::Value) -> Self {
        Payload::Json(JsonPayload::from_value(&v))
    }
}

impl From<JsonPayload> for Payload {
    fn from(j: JsonPayload) -> Self {
        Payload::Json(j)
    }
}

impl From<Vec<u8>> for Payload {
    fn from(v: Vec<u8>) -> Self {
        Payload::Binary(v)
    }
}

/// JSON payloads are written verbatim in human-readable formats and as a value tree in
/// binary ones (parsing the text); bytes are a base64 string.
impl Serialize for Payload {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Payload::Json(j) if s.is_human_readable() => j.serialize(s),
            Payload::Json(j) => j
                .to_value()
                .map_err(serde::ser::Error::custom)?
                .serialize(s),
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
