//! Codecs (US-006): JSON compact/pretty, headers-only, without payload, MessagePack with
//! compression.

mod cxp_common;

use cxp_common::*;
use orchestrata_schemas::cxp::*;
use serde_json::json;

// REQ-004-US-006-025 REQ-004-US-006-026
#[test]
fn compact_and_pretty_json_decode_to_the_same_packet() {
    let p = CxpPacket::from_json(SPEC_EXAMPLE).unwrap();
    let compact = p.to_json().unwrap();
    let pretty = p.to_json_pretty().unwrap();
    assert!(!compact.contains('\n') && !compact.contains(": "));
    assert!(pretty.contains("\n  \"message_id\": "));
    assert_eq!(CxpPacket::from_json(&compact).unwrap(), p);
    assert_eq!(CxpPacket::from_json(&pretty).unwrap(), p);
}

// REQ-004-US-006-027 REQ-004-US-006-028
#[test]
fn headers_only_and_without_payload_serialization() {
    let p = packet().with_metadata("review_cycle", json!(2));
    let headers: serde_json::Value = serde_json::from_str(&p.headers_to_json().unwrap()).unwrap();
    let keys: Vec<_> = headers.as_object().unwrap().keys().cloned().collect();
    assert_eq!(keys.len(), 10);
    assert!(headers.get("payload").is_none() && headers.get("metadata").is_none());
    let h: CxpHeaders = serde_json::from_value(headers).unwrap();
    assert_eq!(h, p.get_headers());
    let without: serde_json::Value =
        serde_json::from_str(&p.to_json_without_payload().unwrap()).unwrap();
    assert!(without.get("payload").is_none());
    assert_eq!(without["metadata"]["review_cycle"], 2);
    assert_eq!(without["message_id"], p.message_id().to_string());
    // Without the payload it is not a packet.
    assert_eq!(
        CxpPacket::from_json(&without.to_string()).unwrap_err(),
        CxpError::MissingField("payload")
    );
}

// REQ-004-US-006-017 REQ-004-US-006-018 REQ-004-US-006-021 REQ-004-US-006-022
#[test]
fn messagepack_round_trip_is_lossless() {
    let p = CxpPacket::from_json(SPEC_EXAMPLE)
        .unwrap()
        .with_metadata("k", json!({"nested": [1, 2.5, "x"]}));
    let bytes = p.to_bytes().unwrap();
    assert!(bytes.len() < p.to_json().unwrap().len());
    assert_eq!(CxpPacket::from_bytes(&bytes).unwrap(), p);
    let bin = CxpPacket::new_at(alias("U:Ox"), alias("U:Vz"), "b", vec![1u8, 2, 3], t(0))
        .unwrap()
        .with_content_type("application/octet-stream")
        .unwrap();
    assert_eq!(
        CxpPacket::from_bytes(&bin.to_bytes().unwrap()).unwrap(),
        bin
    );
}

// REQ-004-US-006-017 REQ-004-US-006-018
// An independent decoder (Python's `msgpack`, which tests/run.sh installs) reads our
// MessagePack: every field of the JSON form, and the payload's text in its frame.
#[test]
fn messagepack_output_is_read_by_an_independent_decoder() {
    use std::io::Write as _;
    use std::process::{Command, Stdio};
    let p = CxpPacket::from_json(SPEC_EXAMPLE)
        .unwrap()
        .with_metadata("k", json!({"nested": [1, 2.5, "x"]}));
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/python/decode_msgpack.py"
    );
    let mut child = Command::new(std::env::var("PYTHON").unwrap_or_else(|_| "python3".into()))
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run python3 (tests/run.sh installs msgpack)");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(&p.to_bytes().unwrap())
        .expect("write the packet");
    let out = child.wait_with_output().expect("python exits");
    assert!(
        out.status.success(),
        "decoder failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut decoded: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let mut expected: serde_json::Value = serde_json::from_str(&p.to_json().unwrap()).unwrap();
    let payload = expected
        .as_object_mut()
        .and_then(|o| o.remove("payload"))
        .expect("a payload");
    let text = decoded["payload_text"].as_str().expect("JSON payload text");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(text).unwrap(),
        payload
    );
    assert_eq!(decoded["payload_frame"]["z"], false);
    assert_eq!(decoded["payload_frame"]["n"], text.len());
    let fields = decoded.as_object_mut().unwrap();
    fields.remove("payload_text");
    fields.remove("payload_frame");
    assert_eq!(decoded, expected);
}

// REQ-004-US-006-020 REQ-004-US-006-024
#[test]
fn large_payloads_are_compressed_and_transparently_decompressed() {
    let text = "the quick brown fox ".repeat(5_000);
    let p = CxpPacket::new_at(
        alias("U:Ox"),
        alias("U:Vz"),
        "big",
        json!({"text": text}),
        t(0),
    )
    .unwrap();
    let bytes = p.to_bytes().unwrap();
    assert!(bytes.len() < 10_000, "compressed to {} bytes", bytes.len());
    assert_eq!(CxpPacket::from_bytes(&bytes).unwrap(), p);
    let blob: Vec<u8> = (0..200_000u32).map(|i| (i % 7) as u8).collect();
    let b = CxpPacket::new_at(alias("U:Ox"), alias("U:Vz"), "blob", blob, t(0))
        .unwrap()
        .with_content_type("application/octet-stream")
        .unwrap();
    let bytes = b.to_bytes().unwrap();
    assert!(bytes.len() < 20_000);
    assert_eq!(CxpPacket::from_bytes(&bytes).unwrap(), b);
}

fn with_frame(frame: Frame) -> Vec<u8> {
    let mut v: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(SPEC_EXAMPLE).unwrap();
    v.remove("payload");
    #[derive(serde::Serialize)]
    struct Doc {
        #[serde(flatten)]
        rest: serde_json::Map<String, serde_json::Value>,
        payload: Frame,
    }
    rmp_serde::to_vec_named(&Doc {
        rest: v,
        payload: frame,
    })
    .unwrap()
}

// REQ-004-US-003-011 REQ-004-US-003-013 REQ-004-US-003-018
#[test]
fn hostile_frames_are_refused_without_allocating() {
    // A declared 4 GB decompressed size is refused before allocation.
    let err = CxpPacket::from_bytes(&with_frame(Frame {
        k: 1,
        z: true,
        n: 4 << 30,
        d: vec![0; 8],
    }))
    .unwrap_err();
    assert!(
        matches!(err, CxpError::PayloadTooLarge { kind: "binary", .. }),
        "{err}"
    );
    let err = CxpPacket::from_bytes(&with_frame(Frame {
        k: 0,
        z: false,
        n: 11 << 20,
        d: vec![],
    }))
    .unwrap_err();
    assert!(
        matches!(err, CxpError::PayloadTooLarge { kind: "json", .. }),
        "{err}"
    );
    // Lies about the length, bad lz4, unknown kinds and bad JSON are decode errors.
    let err = CxpPacket::from_bytes(&with_frame(Frame {
        k: 0,
        z: false,
        n: 99,
        d: b"{}".to_vec(),
    }))
    .unwrap_err();
    assert!(
        matches!(
            err,
            CxpError::Decode {
                format: "frame",
                ..
            }
        ),
        "{err}"
    );
    let err = CxpPacket::from_bytes(&with_frame(Frame {
        k: 0,
        z: true,
        n: 100,
        d: vec![0xff; 20],
    }))
    .unwrap_err();
    assert!(
        matches!(
            err,
            CxpError::Decode {
                format: "frame",
                ..
            }
        ),
        "{err}"
    );
    let err = CxpPacket::from_bytes(&with_frame(Frame {
        k: 9,
        z: false,
        n: 2,
        d: b"{}".to_vec(),
    }))
    .unwrap_err();
    assert!(
        matches!(
            err,
            CxpError::Decode {
                format: "frame",
                ..
            }
        ),
        "{err}"
    );
    let err = CxpPacket::from_bytes(&with_frame(Frame {
        k: 0,
        z: false,
        n: 2,
        d: b"{x".to_vec(),
    }))
    .unwrap_err();
    assert_eq!(err.field(), Some("payload"));
    // A well-formed frame decodes.
    let ok = CxpPacket::from_bytes(&with_frame(Frame {
        k: 0,
        z: false,
        n: 2,
        d: b"{}".to_vec(),
    }))
    .unwrap();
    assert_eq!(ok.payload_json().unwrap(), json!({}));
    // Bytes that are not MessagePack at all.
    assert!(matches!(
        CxpPacket::from_bytes(b"\xc1garbage"),
        Err(CxpError::Decode {
            format: "msgpack",
            ..
        })
    ));
}

// REQ-004-US-006-011 REQ-004-US-006-003
#[test]
fn timestamps_keep_sub_second_precision_and_offsets_normalise_to_utc() {
    let doc = example_with(|m| {
        m.insert(
            "timestamp".into(),
            json!("2026-01-15T12:30:00.123456789+02:00"),
        );
    });
    let p = CxpPacket::from_json(&doc).unwrap();
    assert_eq!(
        p.timestamp().to_rfc3339(),
        "2026-01-15T10:30:00.123456789+00:00"
    );
    let v = p.to_json_value().unwrap();
    assert_eq!(v["timestamp"], "2026-01-15T10:30:00.123456789Z");
    assert_eq!(CxpPacket::from_bytes(&p.to_bytes().unwrap()).unwrap(), p);
}
