//! Decoding bad bytes is a typed error, never a panic (issue 3).

use chrono::{TimeZone, Utc};
use orchestrata_schemas::events::fields::Json;
use orchestrata_schemas::events::kernel::CommandRejected;
use orchestrata_schemas::events::volk_lifecycle::VolkRegistered;
use orchestrata_schemas::events::{codec, decode, encode, CodecError, EventRecord};
use proptest::prelude::*;

fn record() -> EventRecord {
    let event = VolkRegistered {
        alias: "U:Qa".into(),
        capabilities: vec!["review".into(), "test".into()],
        parent: Some("U:Ox".into()),
        protocols: vec!["cxp/1.0".into()],
        session_id: None,
        metadata: Json(serde_json::json!({"a": 1})),
    };
    EventRecord::new(
        "kernel",
        "U:Qa",
        event,
        Utc.timestamp_micros(1_768_473_000_000_000).unwrap(),
    )
}

// issue 3: decode of garbage, truncated bytes or an unknown fingerprint is a typed error
#[test]
fn header_errors_are_typed() {
    assert_eq!(decode(&[]), Err(CodecError::TooShort { len: 0 }));
    assert_eq!(
        decode(&[0xC3, 0x01, 1]),
        Err(CodecError::TooShort { len: 3 })
    );
    let mut bytes = encode(&record()).unwrap();
    bytes[0] = b'{';
    assert_eq!(
        decode(&bytes),
        Err(CodecError::BadMagic {
            found: [b'{', 0x01]
        })
    );
    let mut bytes = encode(&record()).unwrap();
    bytes[2..10].copy_from_slice(&[0xAB; 8]);
    assert_eq!(
        decode(&bytes),
        Err(CodecError::UnknownFingerprint {
            fingerprint: 0xABAB_ABAB_ABAB_ABAB
        })
    );
    let message = decode(&bytes).unwrap_err().to_string();
    assert!(message.contains("abababababababab"), "{message}");
}

// issue 3: every truncation of a valid record is a typed error naming the event type
#[test]
fn every_truncation_is_a_typed_error() {
    let bytes = encode(&record()).unwrap();
    for len in 0..bytes.len() {
        let err = decode(&bytes[..len]).unwrap_err();
        if len >= codec::HEADER_LEN {
            assert!(
                matches!(
                    err,
                    CodecError::Field {
                        event_type: "registered",
                        ..
                    } | CodecError::Body {
                        event_type: "registered",
                        ..
                    }
                ),
                "{len}: {err:?}"
            );
        }
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert_eq!(
        decode(&longer),
        Err(CodecError::TrailingBytes {
            event_type: "registered",
            count: 1
        })
    );
}

// issue 3: invalid field contents are errors that name the field
#[test]
fn bad_field_contents_name_the_field() {
    let rec = record();
    let bytes = encode(&rec).unwrap();
    // event_id: length byte 0x48 (36) then the UUID text; break one character.
    let mut bad = bytes.clone();
    bad[11] = b'z';
    let err = decode(&bad).unwrap_err();
    assert!(
        matches!(
            err,
            CodecError::Field {
                field: "event_id",
                ..
            }
        ),
        "{err:?}"
    );
    // An event field holding bytes that are not UTF-8.
    let rejected = EventRecord::new(
        "kernel",
        "k",
        CommandRejected {
            code: "c".into(),
            message: "m".into(),
        },
        rec.timestamp,
    );
    let mut bytes = encode(&rejected).unwrap();
    let n = bytes.len();
    bytes[n - 1] = 0xFF; // last byte of `message`: invalid UTF-8
    let err = decode(&bytes).unwrap_err();
    assert!(
        matches!(&err, CodecError::Body { reason, .. } if reason.contains("UTF-8")),
        "{err:?}"
    );
}

proptest! {
    // issue 3: arbitrary bytes after a valid header never panic the decoder
    #[test]
    fn garbage_bodies_never_panic(body in proptest::collection::vec(any::<u8>(), 0..300)) {
        let mut bytes = encode(&record()).unwrap();
        bytes.truncate(codec::HEADER_LEN);
        bytes.extend_from_slice(&body);
        let _ = decode(&bytes);
    }

    // issue 3: flipping any byte of a valid record decodes or errors, never panics
    #[test]
    fn corrupted_records_never_panic(index in 0usize..400, value in any::<u8>()) {
        let mut bytes = encode(&record()).unwrap();
        let i = index % bytes.len();
        bytes[i] = value;
        if let Ok(back) = decode(&bytes) {
            prop_assert_eq!(back.event.event_type(), "registered");
        }
    }

    // issue 3: fully random input never panics
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        let _ = decode(&bytes);
    }
}
