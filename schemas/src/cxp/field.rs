//! [`Field`]: one untrusted text field of an incoming packet, read without copying.
//!
//! Decoding a header as a `serde_json::Value` allocates a `String` for every field only
//! to parse it and throw it away (a UUID, an alias, a timestamp). A `Field` borrows the
//! text from the input when the format hands out borrowed strings (JSON without escapes,
//! MessagePack from a slice) and keeps any other value as a `Value`, so the decoder can
//! still say *what* it got instead of a string ("expected a string, got integer").

use std::borrow::Cow;
use std::fmt;

use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// A field value as it arrived: text (borrowed when possible) or anything else.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Field<'a> {
    /// A string, borrowed from the input when the deserializer allows it.
    Str(Cow<'a, str>),
    /// Any other JSON value (kept to name its type in errors).
    Other(Value),
}

impl<'de: 'a, 'a> Deserialize<'de> for Field<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(FieldVisitor)
    }
}

struct FieldVisitor;

impl<'de> Visitor<'de> for FieldVisitor {
    type Value = Field<'de>;

    // Same wording as `serde_json::Value`, so errors read as before.
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Field::Str(Cow::Borrowed(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Field::Str(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Field::Str(Cow::Owned(v)))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Field::Other(Value::Bool(v)))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Field::Other(Value::from(v)))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Field::Other(Value::from(v)))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Field::Other(Value::from(v)))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Field::Other(Value::Null))
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Field::Other(Value::Null))
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        Field::deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        Value::deserialize(SeqAccessDeserializer::new(seq)).map(Field::Other)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        Value::deserialize(MapAccessDeserializer::new(map)).map(Field::Other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // REQ-004-US-006-021
    #[test]
    fn strings_borrow_from_json_and_other_values_keep_their_type() {
        let f: Field<'_> = serde_json::from_str(r#""U:Ox""#).unwrap();
        assert!(matches!(f, Field::Str(Cow::Borrowed("U:Ox"))));
        let f: Field<'_> = serde_json::from_str(r#""a\nb""#).unwrap();
        assert_eq!(f, Field::Str(Cow::Owned("a\nb".into())));
        for (text, value) in [
            ("7", Value::from(7)),
            ("-7", Value::from(-7)),
            ("1.5", Value::from(1.5)),
            ("true", Value::Bool(true)),
            ("null", Value::Null),
            ("[1,\"x\"]", serde_json::json!([1, "x"])),
            ("{\"k\":[null]}", serde_json::json!({"k": [null]})),
        ] {
            let f: Field<'_> = serde_json::from_str(text).unwrap();
            assert_eq!(f, Field::Other(value), "{text}");
        }
        assert!(serde_json::from_str::<Field<'_>>("[1,").is_err());
    }

    // REQ-004-US-006-021
    #[test]
    fn strings_borrow_from_messagepack_and_bytes_are_refused() {
        let bytes = rmp_serde::to_vec(&"U:Vz").unwrap();
        let f: Field<'_> = rmp_serde::from_slice(&bytes).unwrap();
        assert!(matches!(f, Field::Str(Cow::Borrowed("U:Vz"))));
        let bytes = rmp_serde::to_vec(&serde_bytes::Bytes::new(b"raw")).unwrap();
        let err = rmp_serde::from_slice::<Field<'_>>(&bytes).unwrap_err();
        assert!(err.to_string().contains("any valid JSON value"), "{err}");
    }
}
