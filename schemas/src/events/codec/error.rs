//! The codec's errors.

use std::fmt;

/// Why a record could not be encoded or decoded. Every variant names what was wrong;
/// decoding untrusted bytes returns one of these, never panics.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    /// Fewer bytes than the 10-byte single-object header.
    #[error("record too short: {len} bytes, the single-object header alone needs 10")]
    TooShort {
        /// Bytes given.
        len: usize,
    },
    /// The first two bytes are not the single-object marker `C3 01`.
    #[error("not an Avro single-object record: starts with {found:02X?}, expected [C3, 01]")]
    BadMagic {
        /// The two bytes found.
        found: [u8; 2],
    },
    /// The fingerprint names no schema in `schemas/avro/`.
    #[error("unknown schema fingerprint {fingerprint:016x} (little-endian bytes read as u64): no event type has it")]
    UnknownFingerprint {
        /// The fingerprint, the 8 header bytes read little-endian.
        fingerprint: u64,
    },
    /// An envelope field could not be read.
    #[error("`{event_type}` record: field `{field}`: {reason}")]
    Field {
        /// The event type the fingerprint named.
        event_type: &'static str,
        /// The envelope field.
        field: &'static str,
        /// What was wrong.
        reason: String,
    },
    /// The event's own fields could not be read.
    #[error("`{event_type}` record: event fields: {reason}")]
    Body {
        /// The event type the fingerprint named.
        event_type: &'static str,
        /// What was wrong.
        reason: String,
    },
    /// The record was read completely but bytes were left over.
    #[error("`{event_type}` record: {count} unexpected bytes after the last field")]
    TrailingBytes {
        /// The event type the fingerprint named.
        event_type: &'static str,
        /// How many bytes were left.
        count: usize,
    },
    /// The event could not be written (a value outside what Avro can carry).
    #[error("`{event_type}` record could not be encoded: {reason}")]
    Encode {
        /// The event type.
        event_type: &'static str,
        /// What was wrong.
        reason: String,
    },
    /// An embedded `.avsc` failed to parse (a build defect the tests catch).
    #[error("schema `{file}` is invalid: {reason}")]
    Schema {
        /// The file under `schemas/avro/`.
        file: &'static str,
        /// The parser's complaint.
        reason: String,
    },
}

/// The serde codec's error: a message; [`CodecError`] adds which record and field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AvroError(String);

impl AvroError {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        AvroError(message.into())
    }
}

impl fmt::Display for AvroError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for AvroError {}

impl serde::ser::Error for AvroError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        AvroError(msg.to_string())
    }
}

impl serde::de::Error for AvroError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        AvroError(msg.to_string())
    }
}
