//! A JSON payload is kept as its validated text (`JsonPayload`): equality stays
//! semantic, the shape and size rules still hold on both codecs, malformed payload text
//! is refused naming `payload`, and a payload survives every codec unchanged in value.

mod cxp_common;

use cxp_common::*;
use orchestrata_schemas::cxp::*;
use proptest::prelude::*;
use serde_json::{json, Value};

/// The spec example with its payload replaced by `payload_text` (inserted verbatim).
fn doc_with_payload(payload_text: &str) -> String {
    let marker = "\"__payload__\"";
    example_with(|m| {
        m.insert("payload".into(), json!("__payload__"));
    })
    .replace(marker, payload_text)
}

/// The spec example in MessagePack with a hand-made payload frame.
fn msgpack_with_frame(frame: Frame) -> Vec<u8> {
    let mut v: serde_json::Map<String, Value> = serde_json::from_str(SPEC_EXAMPLE).unwrap();
    v.remove("payload");
    #[derive(serde::Serialize)]
    struct Doc {
        #[serde(flatten)]
        rest: serde_json::Map<String, Value>,
        payload: Frame,
    }
    rmp_serde::to_vec_named(&Doc {
        rest: v,
        payload: frame,
    })
    .unwrap()
}

/// A MessagePack packet whose JSON payload frame carries `text` (uncompressed).
fn msgpack_with_json_text(text: &str) -> Vec<u8> {
    msgpack_with_frame(Frame {
        k: 0,
        z: false,
        n: text.len() as u64,
        d: text.as_bytes().to_vec(),
    })
}

// REQ-004-US-003-016 REQ-004-US-006-026 REQ-004-US-006-009
#[test]
fn whitespace_laden_payload_text_equals_its_compact_form() {
    let spaced = "{\n  \"task\" : \"generate code\",\r\n\t\"n\" : [ 1 , 2.5 , null ] ,\n  \"s\": \" a \\\" b \" }";
    let value: Value = serde_json::from_str(spaced).unwrap();
    // The sender's text without the whitespace between tokens (key order kept).
    let compact = r#"{"task":"generate code","n":[1,2.5,null],"s":" a \" b "}"#;

    let p = CxpPacket::from_json(&doc_with_payload(spaced)).unwrap();
    let text = p.payload().as_json().unwrap();
    // Whitespace between tokens is gone, whitespace inside strings is kept.
    assert_eq!(text.as_str(), compact);
    assert_eq!(text, &JsonPayload::from_value(&value));
    assert_eq!(p.payload_json().unwrap(), value);
    // The compact wire form stays compact.
    let out = p.to_json().unwrap();
    assert!(!out.contains('\n') && !out.contains(" : "), "{out}");
    assert!(out.contains("\" a \\\" b \""), "{out}");

    // The same through MessagePack: a foreign encoder's spaced text decodes equal.
    let q = CxpPacket::from_bytes(&msgpack_with_json_text(spaced)).unwrap();
    assert_eq!(q.payload(), p.payload());
    assert_eq!(q.payload().as_json().unwrap().as_str(), compact);

    // A payload built from spaced text by hand is equal to its compact form too.
    assert_eq!(
        JsonPayload::parse(spaced).unwrap(),
        JsonPayload::from_value(&value)
    );
}

// REQ-004-US-003-001 REQ-004-US-003-003 REQ-004-US-003-016
#[test]
fn key_order_does_not_affect_equality() {
    let a = JsonPayload::parse(r#"{"b":1,"a":[{"y":2,"x":"\u00e9"}]}"#).unwrap();
    let b = JsonPayload::from_value(&json!({"a": [{"x": "é", "y": 2}], "b": 1}));
    assert_ne!(a.as_str(), b.as_str());
    assert_eq!(a, b);
    assert_eq!(b, a);
    // Different values are not equal, whatever the texts.
    let c = JsonPayload::parse(r#"{"b":1,"a":[{"y":3,"x":"é"}]}"#).unwrap();
    assert_ne!(a, c);
    assert_ne!(b, c);
    // Array order does matter.
    assert_ne!(
        JsonPayload::parse("[1,2]").unwrap(),
        JsonPayload::parse("[2,1]").unwrap()
    );
    // Two packets that differ only in the payload's key order are equal.
    let p1 = CxpPacket::from_json(&doc_with_payload(r#"{"x":1,"y":{"q":true,"p":null}}"#));
    let p2 = CxpPacket::from_json(&doc_with_payload(r#"{"y":{"p":null,"q":true},"x":1}"#));
    assert_eq!(p1.unwrap(), p2.unwrap());
}

// REQ-004-US-003-014 REQ-004-US-003-015 REQ-004-US-003-016 REQ-004-US-003-019
#[test]
fn scalar_payloads_are_rejected_naming_payload_on_both_codecs() {
    for (text, kind) in [
        ("7", "integer"),
        ("-7.5e3", "number"),
        ("true", "boolean"),
        ("false", "boolean"),
        ("null", "null"),
    ] {
        let err = CxpPacket::from_json(&doc_with_payload(text)).unwrap_err();
        assert_eq!(err.field(), Some("payload"), "{text}: {err}");
        if text == "null" {
            // An explicit null counts as no payload at all.
            assert_eq!(err, CxpError::MissingField("payload"));
        } else {
            assert!(err.to_string().contains(kind), "{text}: {err}");
        }
        let err = CxpPacket::from_bytes(&msgpack_with_json_text(text)).unwrap_err();
        assert_eq!(err.field(), Some("payload"), "{text}: {err}");
        assert!(err.to_string().contains(kind), "{text}: {err}");
    }
    // In JSON a string payload means base64 bytes: not base64 is refused as such...
    let err = CxpPacket::from_json(&doc_with_payload(r#""not base64!""#)).unwrap_err();
    assert_eq!(err.field(), Some("payload"));
    assert!(err.to_string().contains("base64"), "{err}");
    // ...and a JSON frame holding a string is not an object or array.
    let err = CxpPacket::from_bytes(&msgpack_with_json_text(r#""text""#)).unwrap_err();
    assert_eq!(err.field(), Some("payload"));
    assert!(err.to_string().contains("string"), "{err}");
    // Built in code, a scalar is refused as well.
    let err = CxpPacket::new_at(alias("U:Ox"), alias("U:Vz"), "s", json!(3), t(0)).unwrap_err();
    assert_eq!(err.field(), Some("payload"));
}

/// `[ "xxx…" ]` whose compact form is `len` bytes.
fn array_of_one_string(len: usize) -> String {
    format!("[\"{}\"]", "x".repeat(len - 4))
}

// REQ-004-US-003-007 REQ-004-US-003-018 REQ-004-US-006-024
#[test]
fn payloads_over_10_mb_are_rejected_on_both_codecs() {
    let over = array_of_one_string(MAX_JSON_PAYLOAD_BYTES + 1);
    let too_large = |e: &CxpError| {
        matches!(e, CxpError::PayloadTooLarge { kind: "json", size, limit }
            if *size > MAX_JSON_PAYLOAD_BYTES && *limit == MAX_JSON_PAYLOAD_BYTES)
    };
    let err = CxpPacket::from_json(&doc_with_payload(&over)).unwrap_err();
    assert!(too_large(&err), "{err}");
    assert_eq!(err.field(), Some("payload"));
    // MessagePack, plain and compressed.
    let err = CxpPacket::from_bytes(&msgpack_with_json_text(&over)).unwrap_err();
    assert!(too_large(&err), "{err}");
    let squeezed = lz4_flex::block::compress(over.as_bytes());
    let err = CxpPacket::from_bytes(&msgpack_with_frame(Frame {
        k: 0,
        z: true,
        n: over.len() as u64,
        d: squeezed,
    }))
    .unwrap_err();
    assert!(too_large(&err), "{err}");

    // Exactly at the limit both codecs accept, and the text is kept whole.
    let at = array_of_one_string(MAX_JSON_PAYLOAD_BYTES);
    let p = CxpPacket::from_json(&doc_with_payload(&at)).unwrap();
    assert_eq!(p.payload().as_json().unwrap().text_len(), at.len());
    let q = CxpPacket::from_bytes(&p.to_bytes().unwrap()).unwrap();
    assert_eq!(q, p);

    // Short text whose compact form is over the limit (each `1e15` prints as
    // `1000000000000000.0`): measured exactly on both codecs.
    let numbers = format!("[{}]", vec!["1e15"; 560_000].join(","));
    assert!(numbers.len() < 3 << 20);
    let err = CxpPacket::from_json(&doc_with_payload(&numbers)).unwrap_err();
    assert!(too_large(&err), "{err}");
    let err = CxpPacket::from_bytes(&msgpack_with_json_text(&numbers)).unwrap_err();
    assert!(too_large(&err), "{err}");
}

// REQ-004-US-003-005 REQ-004-US-003-016 REQ-004-US-003-019 REQ-004-US-006-009
#[test]
fn malformed_payload_text_is_rejected_naming_payload() {
    for bad in [
        r#"{"a":1,}"#,
        r#"{"a":tru}"#,
        r#"{"a" 1}"#,
        r#"[1,2"#,
        r#"{"a":"\q"}"#,
        r#"[01]"#,
        r#"{"a":1}}"#,
    ] {
        // Inside a MessagePack frame the payload's text stands alone.
        let err = CxpPacket::from_bytes(&msgpack_with_json_text(bad)).unwrap_err();
        assert_eq!(err.field(), Some("payload"), "{bad}: {err}");
        assert!(err.to_string().contains("invalid JSON"), "{bad}: {err}");
    }
    for bad in [
        r#"{"a":1,}"#,
        r#"{"a":tru}"#,
        r#"{"a" 1}"#,
        r#"{"a":"\q"}"#,
        r#"[01]"#,
    ] {
        // Inside a JSON packet, an error within the payload's text names `payload`.
        let err = CxpPacket::from_json(&doc_with_payload(bad)).unwrap_err();
        assert_eq!(err.field(), Some("payload"), "{bad}: {err}");
        assert!(err.to_string().contains("line 1 column"), "{bad}: {err}");
    }
    // Truncated inside the payload: the document ends there, so the error is the
    // payload's.
    let doc = doc_with_payload(r#"{"task":"generate","n":[1,2"#);
    let cut = &doc[..doc.find("[1,2").unwrap() + 4];
    let err = CxpPacket::from_json(cut).unwrap_err();
    assert_eq!(err.field(), Some("payload"), "{err}");
    // Not UTF-8 in a frame.
    let err = CxpPacket::from_bytes(&msgpack_with_frame(Frame {
        k: 0,
        z: false,
        n: 4,
        d: vec![b'[', 0xff, 0xfe, b']'],
    }))
    .unwrap_err();
    assert_eq!(err.field(), Some("payload"), "{err}");
    // An error outside the payload stays a document error.
    let err =
        CxpPacket::from_json(&doc_with_payload("{}").replace("\"U:Vz\"", "U:Vz")).unwrap_err();
    assert!(
        matches!(err, CxpError::Decode { format: "json", .. }),
        "{err}"
    );
}

// REQ-004-US-003-003 REQ-004-US-003-006 REQ-004-US-006-017 REQ-004-US-006-021
// REQ-004-US-006-022 REQ-004-US-006-024
#[test]
fn json_to_messagepack_to_json_preserves_the_value() {
    let long: Vec<Value> = (0..400)
        .map(|i| json!({"i": i, "text": format!("line {i} of a long payload, ünïcödé ✓")}))
        .collect();
    for payload in [
        json!({"task": "generate_code", "nested": {"a": [1, -2, 3.25, 1e-7, null, true]},
               "unicode": "Grüße, 世界, 🦀", "escapes": "tab\tquote\"slash\\nl\n\u{1}"}),
        json!([[], {}, [[[]]], "", 0, -0.0, 12345678901234567u64]),
        json!({"long": long}),
    ] {
        let p =
            CxpPacket::new_at(alias("U:Ox"), alias("U:Vz"), "s", payload.clone(), t(0)).unwrap();
        // Start from pretty text, as a person might send it.
        let from_text = CxpPacket::from_json(&p.to_json_pretty().unwrap()).unwrap();
        let bytes = from_text.to_bytes().unwrap();
        let from_msgpack = CxpPacket::from_bytes(&bytes).unwrap();
        let back = CxpPacket::from_json(&from_msgpack.to_json().unwrap()).unwrap();
        assert_eq!(back, p);
        assert_eq!(back.payload_json().unwrap(), payload);
        assert_eq!(
            back.payload().as_json().unwrap().as_str(),
            from_msgpack.payload().as_json().unwrap().as_str()
        );
    }
}

// REQ-004-US-003-005 REQ-004-US-003-013 REQ-004-US-006-009 REQ-004-US-006-021
proptest! {
    #[test]
    fn arbitrary_payload_text_never_panics_on_either_codec(
        text in prop_oneof![
            any::<String>(),
            "[\\[\\]{}\":,0-9a-z \\\\.eE+-]{0,40}",
        ],
        z in any::<bool>(),
    ) {
        let json_doc = doc_with_payload(&text);
        let d = if z {
            lz4_flex::block::compress(text.as_bytes())
        } else {
            text.as_bytes().to_vec()
        };
        let bin = msgpack_with_frame(Frame { k: 0, z, n: text.len() as u64, d });
        // Any error is fine; a success is a valid packet that re-encodes to itself.
        let decoded = [CxpPacket::from_json(&json_doc), CxpPacket::from_bytes(&bin)];
        for p in decoded.into_iter().flatten() {
            prop_assert!(p.validate().is_ok());
            prop_assert_eq!(&CxpPacket::from_json(&p.to_json().unwrap()).unwrap(), &p);
            prop_assert_eq!(&CxpPacket::from_bytes(&p.to_bytes().unwrap()).unwrap(), &p);
        }
    }
}
