//! Codecs (US-006): JSON (compact and pretty) and MessagePack with lz4-compressed payloads.
//!
//! Every decode validates: what `from_json` / `from_bytes` return is a valid packet, and
//! every failure is a [`CxpError`] (never a panic), whatever the input bytes.
//!
//! MessagePack form: a map with the packet's JSON field names, where `payload` is a frame
//! `{k: 0 = JSON text | 1 = bytes, z: lz4-compressed?, n: uncompressed length, d: bytes}`.
//! Payloads larger than [`COMPRESSION_THRESHOLD`] are compressed (lz4 block format) when
//! that makes them smaller. On decode `n` is checked against the payload limits before any
//! buffer is allocated, so a hostile length cannot make us allocate more than 100 MB.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::CxpError;
use super::json_payload::JsonPayload;
use super::packet::{CxpPacket, Metadata};
use super::payload::{Payload, MAX_BINARY_PAYLOAD_BYTES, MAX_JSON_PAYLOAD_BYTES};
use super::raw::{payload_json_error, PayloadText, RawPacket};
use super::tracking::Tracking;

/// Payloads above this many bytes are lz4-compressed in the binary form.
pub const COMPRESSION_THRESHOLD: usize = 4096;

const KIND_JSON: u8 = 0;
const KIND_BINARY: u8 = 1;

/// Every field of a packet except the payload, borrowed, with the payload in shape `P`.
#[derive(Serialize)]
struct View<'a, P> {
    message_id: &'a str,
    from_agent: &'a str,
    to_agent: &'a str,
    thread_id: &'a str,
    subject: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    payload: Option<P>,
    timestamp: chrono::DateTime<chrono::Utc>,
    priority: u8,
    delivery_status: &'static str,
    work_status: &'static str,
    protocol_version: &'a semver::Version,
    #[serde(skip_serializing_if = "Metadata::is_empty")]
    metadata: &'a Metadata,
    #[serde(skip_serializing_if = "Option::is_none")]
    content_type: Option<&'a str>,
    #[serde(skip_serializing_if = "Tracking::is_default")]
    tracking: &'a Tracking,
}

#[derive(Serialize)]
struct FrameOut<'a> {
    k: u8,
    z: bool,
    n: u64,
    #[serde(with = "serde_bytes")]
    d: &'a [u8],
}

#[derive(Deserialize)]
struct FrameIn<'a> {
    k: u8,
    z: bool,
    n: u64,
    #[serde(borrow)]
    d: &'a serde_bytes::Bytes,
}

fn json_err(e: serde_json::Error) -> CxpError {
    CxpError::Decode {
        format: "json",
        reason: e.to_string(),
    }
}

impl CxpPacket {
    fn view<'a, P>(&'a self, id: &'a str, payload: Option<P>) -> View<'a, P> {
        View {
            message_id: id,
            from_agent: self.from_agent.as_str(),
            to_agent: self.to_agent.as_str(),
            thread_id: &self.thread_id,
            subject: &self.subject,
            payload,
            timestamp: self.timestamp,
            priority: self.priority.value(),
            delivery_status: self.delivery_status.as_str(),
            work_status: self.work_status.as_str(),
            protocol_version: &self.protocol_version,
            metadata: &self.metadata,
            content_type: self.content_type.as_deref(),
            tracking: &self.tracking,
        }
    }

    /// Compact JSON, the production wire form (REQ-004-US-006-001, -026).
    pub fn to_json(&self) -> Result<String, CxpError> {
        serde_json::to_string(self).map_err(|e| CxpError::Encode {
            format: "json",
            reason: e.to_string(),
        })
    }

    /// Indented JSON for humans (REQ-004-US-006-025). The payload is parsed so that it is
    /// indented too; one that cannot be parsed (see [`JsonPayload::to_value`]) is written
    /// as received.
    pub fn to_json_pretty(&self) -> Result<String, CxpError> {
        let encode_err = |e: serde_json::Error| CxpError::Encode {
            format: "json",
            reason: e.to_string(),
        };
        let parsed = match &self.payload {
            Payload::Json(j) => j.to_value().ok(),
            Payload::Binary(_) => None,
        };
        match parsed {
            Some(payload) => {
                let mut buf = uuid::Uuid::encode_buffer();
                let id = self.message_id.hyphenated().encode_lower(&mut buf);
                serde_json::to_string_pretty(&self.view(id, Some(payload))).map_err(encode_err)
            }
            None => serde_json::to_string_pretty(self).map_err(encode_err),
        }
    }

    /// The packet as a JSON value (what [`super::validate::schema`] checks).
    pub fn to_json_value(&self) -> Result<Value, CxpError> {
        serde_json::to_value(self).map_err(|e| CxpError::Encode {
            format: "json",
            reason: e.to_string(),
        })
    }

    /// JSON of everything except the payload (REQ-004-US-006-027): headers, metadata,
    /// content type and tracking. Not decodable as a packet (the payload is required).
    pub fn to_json_without_payload(&self) -> Result<String, CxpError> {
        let mut buf = uuid::Uuid::encode_buffer();
        let id = self.message_id.hyphenated().encode_lower(&mut buf);
        serde_json::to_string(&self.view::<()>(id, None)).map_err(|e| CxpError::Encode {
            format: "json",
            reason: e.to_string(),
        })
    }

    /// JSON of the headers only (REQ-004-US-006-028): see [`super::CxpHeaders`].
    pub fn headers_to_json(&self) -> Result<String, CxpError> {
        serde_json::to_string(&self.get_headers()).map_err(|e| CxpError::Encode {
            format: "json",
            reason: e.to_string(),
        })
    }

    /// Decode and validate a packet from JSON text.
    ///
    /// The payload's syntax is checked while skipping over it and its text is kept as
    /// is ([`JsonPayload`]); no `Value` tree is built.
    pub fn from_json(text: &str) -> Result<CxpPacket, CxpError> {
        object_start(text.as_bytes())?;
        let raw: RawPacket<'_, PayloadText<'_>> =
            serde_json::from_str(text).map_err(payload_json_error)?;
        raw.into_packet(|p| Payload::from_raw_json(p.0))
    }

    /// Decode and validate a packet from JSON bytes (UTF-8).
    ///
    /// Valid UTF-8 is checked once for the whole input and then parsed as text (serde_json
    /// would otherwise re-check every string); other input takes the byte parser, whose
    /// error names the position of the bad sequence.
    pub fn from_json_slice(bytes: &[u8]) -> Result<CxpPacket, CxpError> {
        if let Ok(text) = std::str::from_utf8(bytes) {
            return Self::from_json(text);
        }
        object_start(bytes)?;
        let raw: RawPacket<'_, PayloadText<'_>> =
            serde_json::from_slice(bytes).map_err(payload_json_error)?;
        raw.into_packet(|p| Payload::from_raw_json(p.0))
    }

    /// Decode and validate a packet from a JSON value.
    pub fn from_json_value(value: Value) -> Result<CxpPacket, CxpError> {
        if !value.is_object() {
            return Err(CxpError::Decode {
                format: "json",
                reason: "a packet must be a JSON object".into(),
            });
        }
        let raw = RawPacket::<Value>::deserialize(value).map_err(json_err)?;
        CxpPacket::try_from(raw)
    }

    /// MessagePack with the payload framed and, above [`COMPRESSION_THRESHOLD`], lz4
    /// compressed (REQ-004-US-006-017, -020). A JSON payload's text goes in as it is.
    pub fn to_bytes(&self) -> Result<Vec<u8>, CxpError> {
        let (kind, raw): (u8, &[u8]) = match &self.payload {
            Payload::Json(j) => (KIND_JSON, j.as_str().as_bytes()),
            Payload::Binary(b) => (KIND_BINARY, b),
        };
        let compressed = if raw.len() > COMPRESSION_THRESHOLD {
            Some(lz4_flex::block::compress(raw)).filter(|c| c.len() < raw.len())
        } else {
            None
        };
        let frame = FrameOut {
            k: kind,
            z: compressed.is_some(),
            n: raw.len() as u64,
            d: compressed.as_deref().unwrap_or(raw),
        };
        let mut buf = uuid::Uuid::encode_buffer();
        let id = self.message_id.hyphenated().encode_lower(&mut buf);
        // The frame's bytes dominate; sizing the output up front saves re-copying them as
        // the vector grows (headers are a few hundred bytes).
        let mut out = Vec::with_capacity(frame.d.len() + 512);
        rmp_serde::encode::write_named(&mut out, &self.view(id, Some(frame))).map_err(|e| {
            CxpError::Encode {
                format: "msgpack",
                reason: e.to_string(),
            }
        })?;
        Ok(out)
    }

    /// Decode, decompress and validate a packet from its MessagePack form
    /// (REQ-004-US-006-021, -024).
    pub fn from_bytes(bytes: &[u8]) -> Result<CxpPacket, CxpError> {
        let raw: RawPacket<'_, FrameIn<'_>> =
            rmp_serde::from_slice(bytes).map_err(|e| CxpError::Decode {
                format: "msgpack",
                reason: e.to_string(),
            })?;
        raw.into_packet(decode_frame)
    }
}

/// Refuse input that is not a JSON object before parsing it.
fn object_start(bytes: &[u8]) -> Result<(), CxpError> {
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{') {
        Ok(())
    } else {
        Err(CxpError::Decode {
            format: "json",
            reason: "a packet must be a JSON object".into(),
        })
    }
}

fn frame_err(reason: impl Into<String>) -> CxpError {
    CxpError::Decode {
        format: "frame",
        reason: reason.into(),
    }
}

fn decode_frame(frame: FrameIn<'_>) -> Result<Payload, CxpError> {
    let (kind, limit) = match frame.k {
        KIND_JSON => ("json", MAX_JSON_PAYLOAD_BYTES),
        KIND_BINARY => ("binary", MAX_BINARY_PAYLOAD_BYTES),
        other => return Err(frame_err(format!("unknown payload kind {other}"))),
    };
    let size = usize::try_from(frame.n).unwrap_or(usize::MAX);
    if size > limit {
        return Err(CxpError::PayloadTooLarge { kind, size, limit });
    }
    let check_len = |len: usize| {
        if len == size {
            Ok(())
        } else {
            Err(frame_err(format!(
                "payload length {len} differs from the declared {size}"
            )))
        }
    };
    let not_utf8 = |e: std::str::Utf8Error| {
        CxpError::invalid("payload", format!("invalid JSON: not UTF-8: {e}"))
    };
    if frame.z {
        let data = lz4_flex::block::decompress(frame.d, size)
            .map_err(|e| frame_err(format!("lz4: {e}")))?;
        check_len(data.len())?;
        if frame.k == KIND_BINARY {
            return Ok(Payload::Binary(data));
        }
        let text = std::str::from_utf8(&data).map_err(not_utf8)?;
        return JsonPayload::parse(text).map(Payload::Json);
    }
    check_len(frame.d.len())?;
    if frame.k == KIND_BINARY {
        return Ok(Payload::Binary(frame.d.to_vec()));
    }
    let text = std::str::from_utf8(frame.d).map_err(not_utf8)?;
    JsonPayload::parse(text).map(Payload::Json)
}
