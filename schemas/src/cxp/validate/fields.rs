//! Single-field rules (US-007 field validation). Each returns an error naming its field.

use super::super::alias::VolkAlias;
use super::super::error::CxpError;
use super::super::json_payload::JsonPayload;
use super::super::payload::{Payload, MAX_BINARY_PAYLOAD_BYTES, MAX_JSON_PAYLOAD_BYTES};

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
///
/// A JSON payload's compact size is its text's length when the text is compact (built
/// from a `Value`). Received text is not re-measured when it is short enough that its
/// compact form cannot exceed the limit (text length × [`MAX_COMPACT_EXPANSION`] ≤ 10 MB);
/// longer text is parsed and measured exactly.
pub fn payload(p: &Payload) -> Result<(), CxpError> {
    match p {
        Payload::Json(j) => {
            json_shape(j)?;
            if !j.is_compact()
                && j.text_len().saturating_mul(MAX_COMPACT_EXPANSION) <= MAX_JSON_PAYLOAD_BYTES
            {
                return Ok(());
            }
            let size = j.compact_len()?;
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

/// How many times longer the compact encoding of a parsed JSON value can be than the
/// text it was parsed from. Whitespace, escapes (`\u00e9` becomes `é`, `\/` becomes `/`)
/// and duplicate keys only shrink; integers keep their digits; only numbers grow: the
/// shortest float-bearing token is 3 bytes (`1e9`, `0.5`) and a float prints in at most
/// 24 (`-2.2250738585072014e-308`), `-0` (2 bytes) prints as `-0.0` (4). So 24 / 3 = 8.
pub const MAX_COMPACT_EXPANSION: usize = 8;

/// A JSON payload is an object or an array (read from its first byte).
fn json_shape(j: &JsonPayload) -> Result<(), CxpError> {
    if j.is_structured() {
        Ok(())
    } else {
        Err(CxpError::invalid(
            "payload",
            format!(
                "a JSON payload must be an object or an array, got {}",
                j.json_type()
            ),
        ))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cxp::{CxpPacket, VolkAlias};

    // REQ-004-US-003-007 REQ-004-US-003-018
    #[test]
    fn compact_json_never_exceeds_the_expansion_bound_of_its_source() {
        for text in [
            "[1e15]",
            "[1e9]",
            "[-0]",
            "[0.5]",
            "[1e-7]",
            "[-1e-300]",
            "[1E16,2e15,3e-5]",
            "[2.2250738585072014e-308]",
            "[123456789012345678901234567890]",
            "[-12345678901234567890]",
            r#"{"a":"\u00e9\/\n\u0001","a":1}"#,
            r#"[ "\ud83d\ude00" , { } ]"#,
        ] {
            let v: serde_json::Value = serde_json::from_str(text).unwrap();
            let compact = json_size(&v);
            assert_eq!(compact, serde_json::to_vec(&v).unwrap().len());
            assert!(
                compact <= MAX_COMPACT_EXPANSION * text.len(),
                "{text}: {compact} bytes compact"
            );
        }
        // The bound is tight enough to matter: a number token can grow fourfold.
        let v: serde_json::Value = serde_json::from_str("1e15").unwrap();
        assert!(json_size(&v) >= 4 * 4, "{v}");
    }

    // REQ-004-US-003-007 REQ-004-US-003-018
    #[test]
    fn a_small_text_whose_compact_payload_exceeds_10_mb_is_refused() {
        // 560k × `1e15,` is 2.8 MB of text but over 10 MB once compact (each number prints
        // as 1000000000000000.0), so decoding must measure instead of trusting the length.
        let mut payload = String::from("[");
        for i in 0..560_000 {
            if i > 0 {
                payload.push(',');
            }
            payload.push_str("1e15");
        }
        payload.push(']');
        let small = CxpPacket::new(
            VolkAlias::parse("U:Ox").unwrap(),
            VolkAlias::parse("U:Vz").unwrap(),
            "numbers",
            serde_json::json!([]),
        )
        .unwrap()
        .to_json()
        .unwrap();
        let doc = small.replace("\"payload\":[]", &format!("\"payload\":{payload}"));
        assert!(doc.len() < 3 << 20, "{}", doc.len());
        let err = CxpPacket::from_json(&doc).unwrap_err();
        assert!(
            matches!(err, CxpError::PayloadTooLarge { kind: "json", size, .. } if size > MAX_JSON_PAYLOAD_BYTES),
            "{err}"
        );
        // Within the limit the same shape decodes.
        let ok = small.replace("\"payload\":[]", "\"payload\":[1e15,2e-5]");
        let p = CxpPacket::from_json(&ok).unwrap();
        assert_eq!(p.payload_json().unwrap()[1], serde_json::json!(2e-5));
        // A bad shape is still refused on the fast path.
        let bad = small.replace("\"payload\":[]", "\"payload\":7");
        assert_eq!(
            CxpPacket::from_json(&bad).unwrap_err().field(),
            Some("payload")
        );
    }

    // REQ-004-US-003-007 REQ-004-US-003-015
    #[test]
    fn payload_check_agrees_on_compact_and_received_text() {
        // The same values, once built from a `Value` (compact, size = text length) and
        // once received as spaced text (size bounded by the text, or measured): the
        // verdicts agree.
        for (text, ok) in [
            (r#"{"k": [1, 2.5, "x"]}"#, true),
            ("[ ]", true),
            ("3", false),
            (r#""s""#, false),
            ("null", false),
        ] {
            let received = Payload::Json(JsonPayload::parse(text).unwrap());
            let value: serde_json::Value = serde_json::from_str(text).unwrap();
            let built = Payload::Json(JsonPayload::from_value(&value));
            assert_eq!(payload(&received), payload(&built), "{text}");
            assert_eq!(payload(&received).is_ok(), ok, "{text}");
            if !ok {
                assert_eq!(payload(&received).unwrap_err().field(), Some("payload"));
            }
        }
        assert!(payload(&Payload::Binary(vec![1, 2, 3])).is_ok());
    }
}
