//! A JSON payload kept as its validated text, parsed only when someone looks inside.
//!
//! A control plane routes packets by their headers and almost never reads a payload, yet
//! building a `serde_json::Value` tree was most of the cost of decoding a packet (one
//! allocation per key and string, a B-tree node per object). [`JsonPayload`] holds the
//! payload's JSON text instead:
//!
//! - decoding checks the text's syntax while skipping over it (serde_json's `RawValue`
//!   builds no tree) and copies it once (dropping whitespace between tokens, if any);
//! - encoding writes the text verbatim (JSON) or as the frame's bytes (MessagePack);
//! - [`JsonPayload::to_value`] parses on demand, for the few readers that need the
//!   structure (review subjects, custom validators, tools).
//!
//! What skipping checks is JSON's grammar (tokens, nesting, string escapes, UTF-8). Three
//! limits of a parsed `Value` are only met on [`JsonPayload::to_value`]: nesting deeper
//! than 128, numbers beyond the `f64` range (`1e400`) and unpaired UTF-16 surrogate
//! escapes (`"\ud800"`). Such a payload travels unchanged; parsing it reports an error
//! naming `payload`.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::Value;

use super::error::CxpError;
use super::json_text::strip_whitespace;

/// The text of one JSON value, known to be syntactically valid.
///
/// Equality is semantic: two payloads are equal when their JSON values are equal, so
/// whitespace and key order do not matter (`{"a":1, "b":2}` equals `{"b":2,"a":1}`).
/// Identical texts compare without parsing; otherwise both sides are parsed.
#[derive(Clone)]
pub struct JsonPayload {
    raw: Box<RawValue>,
    /// The text is serde_json's compact encoding of its value (it was written by
    /// [`JsonPayload::from_value`]), so its length is the compact size and equal values
    /// have equal texts.
    compact: bool,
}

fn invalid_json(e: impl fmt::Display) -> CxpError {
    CxpError::invalid("payload", format!("invalid JSON: {e}"))
}

impl JsonPayload {
    /// The compact text of `value` (serialized once).
    pub fn from_value(value: &Value) -> Self {
        // A `Value` always serializes: its numbers are finite and its keys are strings.
        let raw = serde_json::value::to_raw_value(value)
            .expect("serializing a serde_json::Value cannot fail");
        JsonPayload { raw, compact: true }
    }

    /// Check `text` is one JSON value (any type) and keep a copy without the whitespace
    /// between tokens. Errors name `payload`.
    pub fn parse(text: &str) -> Result<Self, CxpError> {
        let raw: &RawValue = serde_json::from_str(text).map_err(invalid_json)?;
        Ok(Self::from_raw(raw))
    }

    /// Keep a copy of an already checked value (e.g. borrowed from a packet's text),
    /// without the whitespace between its tokens.
    pub fn from_raw(raw: &RawValue) -> Self {
        let raw = match strip_whitespace(raw.get()).map(RawValue::from_string) {
            Some(Ok(stripped)) => stripped,
            // No whitespace to strip (or, impossibly, the stripped text does not parse:
            // then the text is kept as it came).
            _ => raw.to_owned(),
        };
        JsonPayload {
            raw,
            compact: false,
        }
    }

    /// The JSON text as received, less the whitespace between tokens (or compact, when
    /// built from a `Value`).
    pub fn as_str(&self) -> &str {
        self.raw.get()
    }

    /// The text as a serde_json `RawValue`, to embed verbatim in another document.
    pub fn as_raw(&self) -> &RawValue {
        &self.raw
    }

    /// Length of the text in bytes.
    pub fn text_len(&self) -> usize {
        self.as_str().len()
    }

    /// True when the text is known to be the compact encoding of its value.
    pub fn is_compact(&self) -> bool {
        self.compact
    }

    /// Parse the text into a `Value`. Fails, naming `payload`, only for the limits listed
    /// in the module docs (depth, number range, unpaired surrogates).
    pub fn to_value(&self) -> Result<Value, CxpError> {
        serde_json::from_str(self.as_str()).map_err(invalid_json)
    }

    /// Size in bytes of the value's compact encoding: the text's length when it is
    /// compact, else measured on the parsed value.
    pub fn compact_len(&self) -> Result<usize, CxpError> {
        if self.compact {
            Ok(self.text_len())
        } else {
            Ok(super::validate::fields::json_size(&self.to_value()?))
        }
    }

    /// The value's JSON type as JSON Schema names it (`object`, `array`, `string`,
    /// `integer`, `number`, `boolean`, `null`), read from the text without parsing.
    pub fn json_type(&self) -> &'static str {
        let text = self.as_str().trim_start();
        match text.as_bytes().first() {
            Some(b'{') => "object",
            Some(b'[') => "array",
            Some(b'"') => "string",
            Some(b't' | b'f') => "boolean",
            Some(b'n') => "null",
            _ if text.contains(['.', 'e', 'E']) => "number",
            _ => "integer",
        }
    }

    /// True for an object or an array, the shapes a packet payload may take.
    pub fn is_structured(&self) -> bool {
        matches!(self.json_type(), "object" | "array")
    }
}

impl PartialEq for JsonPayload {
    fn eq(&self, other: &Self) -> bool {
        if self.as_str() == other.as_str() {
            return true;
        }
        if self.compact && other.compact {
            // One value has one compact text.
            return false;
        }
        match (self.to_value(), other.to_value()) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
    }
}

/// Reflexive because identical texts are equal before anything is parsed.
impl Eq for JsonPayload {}

impl fmt::Debug for JsonPayload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("JsonPayload").field(&self.as_str()).finish()
    }
}

impl fmt::Display for JsonPayload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<Value> for JsonPayload {
    fn from(value: Value) -> Self {
        JsonPayload::from_value(&value)
    }
}

impl From<&Value> for JsonPayload {
    fn from(value: &Value) -> Self {
        JsonPayload::from_value(value)
    }
}

/// In a human-readable format (JSON) the value itself, written verbatim; in a binary
/// format (the Avro log) a string holding the JSON text.
impl Serialize for JsonPayload {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            self.raw.serialize(s)
        } else {
            s.serialize_str(self.as_str())
        }
    }
}

/// The inverse of the `Serialize` impl. A human-readable source may be any
/// self-describing deserializer (a `serde_json::Value`, for one), so the value is read
/// generically and written compact; a binary source gives the text, which is checked.
impl<'de> Deserialize<'de> for JsonPayload {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        if d.is_human_readable() {
            Value::deserialize(d).map(|v| JsonPayload::from_value(&v))
        } else {
            d.deserialize_str(TextVisitor)
        }
    }
}

/// Reads the JSON text of a binary format's string, borrowing it when the format can.
struct TextVisitor;

fn text_error<E: serde::de::Error>(e: CxpError) -> E {
    E::custom(format!("JSON field is not valid JSON: {e}"))
}

impl serde::de::Visitor<'_> for TextVisitor {
    type Value = JsonPayload;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string of JSON text")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<JsonPayload, E> {
        JsonPayload::parse(v).map_err(text_error)
    }
}
