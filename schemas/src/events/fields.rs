//! Field types with two encodings: readable in JSON (the envelope the gateway and
//! `orchestrata replay` print) and compact in Avro (the log). serde's
//! `is_human_readable` picks one: JSON is human readable, the Avro codec is not.
//!
//! | Rust                   | JSON                         | Avro                                  |
//! |------------------------|------------------------------|---------------------------------------|
//! | [`Json`]               | the JSON value itself        | `string` holding the JSON text        |
//! | [`JsonPayload`](crate::cxp::JsonPayload) (packet payloads) | the JSON value, verbatim | `string` holding the JSON text |
//! | `DateTime` via [`ts`]  | RFC 3339 string              | `long`, logicalType `timestamp-micros`|
//! | `Uuid` via [`uuid`]    | hyphenated string            | `string`, logicalType `uuid`          |
//! | `Vec<u8>` via [`bytes`]| base64 (standard) string     | `bytes`                               |

use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A free-form JSON value (packet payloads, metadata, details). In Avro it travels as
/// a `string` of JSON text so any consumer can read it without a nested schema.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Json(pub serde_json::Value);

impl From<serde_json::Value> for Json {
    fn from(value: serde_json::Value) -> Self {
        Json(value)
    }
}

impl fmt::Display for Json {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            self.0.serialize(s)
        } else {
            s.collect_str(&self.0)
        }
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        if d.is_human_readable() {
            serde_json::Value::deserialize(d).map(Json)
        } else {
            let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
            serde_json::from_str(&text)
                .map(Json)
                .map_err(|e| serde::de::Error::custom(format!("JSON field is not valid JSON: {e}")))
        }
    }
}

/// `DateTime<Utc>`: RFC 3339 in JSON, microseconds since the Unix epoch in Avro.
pub mod ts {
    use super::*;

    /// Serializes a timestamp (see the module docs).
    pub fn serialize<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            t.serialize(s)
        } else {
            s.serialize_i64(t.timestamp_micros())
        }
    }

    /// Deserializes a timestamp (see the module docs).
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
        if d.is_human_readable() {
            DateTime::<Utc>::deserialize(d)
        } else {
            let micros = i64::deserialize(d)?;
            DateTime::from_timestamp_micros(micros).ok_or_else(|| {
                serde::de::Error::custom(format!("timestamp {micros} µs is out of range"))
            })
        }
    }
}

/// `Option<DateTime<Utc>>` with the encodings of [`ts`].
pub mod opt_ts {
    use super::*;

    #[derive(Serialize, Deserialize)]
    struct W(#[serde(with = "super::ts")] DateTime<Utc>);

    /// Serializes an optional timestamp.
    pub fn serialize<S: Serializer>(t: &Option<DateTime<Utc>>, s: S) -> Result<S::Ok, S::Error> {
        t.map(W).serialize(s)
    }

    /// Deserializes an optional timestamp.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<DateTime<Utc>>, D::Error> {
        Ok(Option::<W>::deserialize(d)?.map(|w| w.0))
    }
}

/// `Uuid` as its hyphenated string in both JSON and Avro.
pub mod uuid {
    use super::*;
    use ::uuid::Uuid;

    /// Serializes a UUID as a string.
    pub fn serialize<S: Serializer>(u: &Uuid, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(u.hyphenated().encode_lower(&mut Uuid::encode_buffer()))
    }

    /// Deserializes a UUID from a string.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Uuid, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Uuid::parse_str(&text)
            .map_err(|e| serde::de::Error::custom(format!("`{text}` is not a UUID: {e}")))
    }
}

/// `Option<Uuid>` with the encoding of [`uuid`](mod@self::uuid).
pub mod opt_uuid {
    use super::*;
    use ::uuid::Uuid;

    #[derive(Serialize, Deserialize)]
    struct W(#[serde(with = "super::uuid")] Uuid);

    /// Serializes an optional UUID.
    pub fn serialize<S: Serializer>(u: &Option<Uuid>, s: S) -> Result<S::Ok, S::Error> {
        u.map(W).serialize(s)
    }

    /// Deserializes an optional UUID.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Uuid>, D::Error> {
        Ok(Option::<W>::deserialize(d)?.map(|w| w.0))
    }
}

/// `Vec<u8>`: base64 in JSON, Avro `bytes` in Avro.
pub mod bytes {
    use super::*;
    use base64::Engine as _;

    /// Serializes bytes (see the module docs).
    pub fn serialize<S: Serializer>(b: &[u8], s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(b))
        } else {
            s.serialize_bytes(b)
        }
    }

    /// Deserializes bytes (see the module docs).
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        if d.is_human_readable() {
            let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
            base64::engine::general_purpose::STANDARD
                .decode(text.as_bytes())
                .map_err(|e| serde::de::Error::custom(format!("invalid base64: {e}")))
        } else {
            struct V;
            impl serde::de::Visitor<'_> for V {
                type Value = Vec<u8>;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("bytes")
                }
                fn visit_bytes<E>(self, v: &[u8]) -> Result<Vec<u8>, E> {
                    Ok(v.to_vec())
                }
            }
            d.deserialize_bytes(V)
        }
    }
}
