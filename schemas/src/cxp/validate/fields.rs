//! Single-field rules (US-007 field validation). Each returns an error naming its field.

use super::super::alias::VolkAlias;
use super::super::error::CxpError;
use super::super::payload::{
    json_type_name, Payload, MAX_BINARY_PAYLOAD_BYTES, MAX_JSON_PAYLOAD_BYTES,
};

/// Longest subject, in characters (Unicode scalar values).
pub const MAX_SUBJECT_CHARS: usize = 200;
/// Longest client-supplied thread id, in characters.
pub const MAX_THREAD_ID_CHARS: usize = 128;
/// Longest content type, in bytes.
pub const MAX_CONTENT_TYPE_LEN: usize = 255;

/// `subject`: 1..=200 characters, not only whitespace.
pub fn subject(s: &str) -> Result<(), CxpError> {
    if s.trim().is_empty() {
        return Err(CxpError::invalid("subject", "must not be empty"));
    }
    // Byte length bounds the char count from above: skip counting for short subjects.
    if s.len() > MAX_SUBJECT_CHARS {
        let n = s.chars().count();
        if n > MAX_SUBJECT_CHARS {
            return Err(CxpError::invalid(
                "subject",
                format!("{n} characters, at most {MAX_SUBJECT_CHARS} allowed"),
            ));
        }
    }
    Ok(())
}

/// `thread_id`: non-empty, at most 128 characters, no whitespace.
pub fn thread_id(s: &str) -> Result<(), CxpError> {
    if s.is_empty() {
        return Err(CxpError::invalid("thread_id", "must not be empty"));
    }
    if s.chars().any(char::is_whitespace) {
        return Err(CxpError::invalid(
            "thread_id",
            "must not contain whitespace",
        ));
    }
    if s.len() > MAX_THREAD_ID_CHARS && s.chars().count() > MAX_THREAD_ID_CHARS {
        return Err(CxpError::invalid(
            "thread_id",
            format!("longer than {MAX_THREAD_ID_CHARS} characters"),
        ));
    }
    Ok(())
}

/// `content_type`: a media type `type/subtype` of printable ASCII without spaces, at most
/// 255 bytes, e.g. `application/octet-stream`.
pub fn content_type(s: &str) -> Result<(), CxpError> {
    let printable = s.bytes().all(|b| (0x21..=0x7e).contains(&b));
    let ok = printable
        && s.len() <= MAX_CONTENT_TYPE_LEN
        && s.split_once('/')
            .is_some_and(|(t, st)| !t.is_empty() && !st.is_empty());
    if ok {
        Ok(())
    } else {
        Err(CxpError::invalid(
            "content_type",
            format!("`{s}` is not a media type like `application/octet-stream`"),
        ))
    }
}

/// `payload`: JSON must be an object or array of at most 10 MB (compact encoding);
/// bytes at most 100 MB.
pub fn payload(p: &Payload) -> Result<(), CxpError> {
    match p {
        Payload::Json(v) => {
            if !(v.is_object() || v.is_array()) {
                return Err(CxpError::invalid(
                    "payload",
                    format!(
                        "a JSON payload must be an object or an array, got {}",
                        json_type_name(v)
                    ),
                ));
            }
            let size = json_size(v);
            if size > MAX_JSON_PAYLOAD_BYTES {
                return Err(CxpError::PayloadTooLarge {
                    kind: "json",
                    size,
                    limit: MAX_JSON_PAYLOAD_BYTES,
                });
            }
            Ok(())
        }
        Payload::Binary(b) => {
            if b.len() > MAX_BINARY_PAYLOAD_BYTES {
                return Err(CxpError::PayloadTooLarge {
                    kind: "binary",
                    size: b.len(),
                    limit: MAX_BINARY_PAYLOAD_BYTES,
                });
            }
            Ok(())
        }
    }
}

/// `from_agent` != `to_agent` (cross-field, but needed at construction).
pub fn distinct_agents(from: VolkAlias, to: VolkAlias) -> Result<(), CxpError> {
    if from == to {
        Err(CxpError::invalid(
            "to_agent",
            format!("must differ from from_agent ({from})"),
        ))
    } else {
        Ok(())
    }
}

/// Size of the compact JSON encoding of `v`, counted without allocating the text.
pub fn json_size(v: &serde_json::Value) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut c = Counter(0);
    // Writing a Value into a counter cannot fail: the writer never errors and a Value
    // always serializes.
    let _ = serde_json::to_writer(&mut c, v);
    c.0
}
