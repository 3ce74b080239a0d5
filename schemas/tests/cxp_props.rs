//! Property tests: lossless round-trips, validate() agreeing with the JSON Schema, and
//! no panic on random or truncated input.

mod cxp_common;

use cxp_common::*;
use orchestrata_schemas::cxp::*;
use proptest::prelude::*;
use serde_json::{json, Value};

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-1e9f64..1e9).prop_map(Value::from),
        "\\PC{0,12}".prop_map(Value::String),
    ]
}

fn json_tree() -> impl Strategy<Value = Value> {
    json_leaf().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("\\PC{0,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn payload() -> impl Strategy<Value = Payload> {
    prop_oneof![
        prop::collection::btree_map("[a-z]{1,6}", json_tree(), 0..4)
            .prop_map(|m| Payload::from(Value::Object(m.into_iter().collect()))),
        prop::collection::vec(json_tree(), 0..4).prop_map(|v| Payload::from(Value::Array(v))),
        prop::collection::vec(any::<u8>(), 0..64).prop_map(Payload::Binary),
        prop::collection::vec(any::<u8>(), 5000..9000).prop_map(Payload::Binary),
    ]
}

fn alias_s() -> impl Strategy<Value = String> {
    "U:[A-Z][A-Za-z]"
}

prop_compose! {
    fn valid_packet()(
        from in alias_s(), to in alias_s(), subject in "\\PC{1,60}", p in payload(),
        secs in 0i64..4_000_000_000, nanos in 0u32..1_000_000_000, prio in 0i64..=10,
        thread in "[A-Za-z0-9_-]{1,40}", steps in 0usize..6,
        meta in prop::collection::btree_map("[a-z]{1,5}", json_tree(), 0..3),
    ) -> Option<CxpPacket> {
        let at = chrono::DateTime::from_timestamp(secs, nanos)?;
        let p_is_bin = p.is_binary();
        let mut pk = CxpPacket::new_at(VolkAlias::parse(&from).ok()?, VolkAlias::parse(&to).ok()?, subject, p, at).ok()?
            .with_thread_id(thread).ok()?
            .with_priority(Priority::new(prio).ok()?);
        if p_is_bin {
            pk = pk.with_content_type("application/octet-stream").ok()?;
        }
        for (k, v) in meta {
            pk = pk.with_metadata(k, v);
        }
        let mut t = at;
        for i in 0..steps {
            t += chrono::Duration::milliseconds(1500);
            let _ = match i {
                0 => pk.transition_delivery(DeliveryStatus::Delivered, t),
                1 => pk.start_work(pk.to_agent(), t),
                2 => pk.add_note(pk.to_agent(), "note", t),
                3 => pk.resolve_work(json!({"ok": true}), t),
                4 => pk.fail_delivery("lost", t),
                _ => pk.archive_work(t),
            };
        }
        Some(pk)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    // REQ-004-US-006-002 REQ-004-US-006-010 REQ-004-US-006-018 REQ-004-US-006-022 REQ-004-US-006-024
    #[test]
    fn round_trips_are_lossless(p in valid_packet()) {
        if let Some(p) = p {
            prop_assert_eq!(&CxpPacket::from_json(&p.to_json().unwrap()).unwrap(), &p);
            prop_assert_eq!(&CxpPacket::from_json(&p.to_json_pretty().unwrap()).unwrap(), &p);
            prop_assert_eq!(&CxpPacket::from_bytes(&p.to_bytes().unwrap()).unwrap(), &p);
            prop_assert!(p.validate().is_ok());
            prop_assert!(validate_document(&p.to_json_value().unwrap()).is_ok());
        }
    }
}

fn field_value() -> impl Strategy<Value = (String, Value)> {
    let uuids = prop_oneof![
        Just(json!("550e8400-e29b-41d4-a716-446655440000")),
        Just(json!("550e8400e29b41d4a716446655440000")),
        Just(json!("550e8400-e29b-41d4-a716-44665544000g")),
        Just(json!(5)),
    ];
    let aliases = prop_oneof![
        Just(json!("U:Qa")),
        Just(json!("U:PS")),
        Just(json!("U:qa")),
        Just(json!("X:Qa")),
        Just(json!(null))
    ];
    let threads = prop_oneof![
        Just(json!("t-1")),
        Just(json!("")),
        Just(json!("a b")),
        "[a-z]{120,135}".prop_map(Value::from)
    ];
    let subjects = prop_oneof![
        Just(json!("ok")),
        Just(json!("")),
        Just(json!(" \t")),
        "[a-zé]{195,205}".prop_map(Value::from),
        Just(json!([]))
    ];
    let payloads = prop_oneof![
        Just(json!({"a": 1})),
        Just(json!([1])),
        Just(json!("AAEC")),
        Just(json!("QQ==")),
        Just(json!("QR==")),
        Just(json!("A")),
        Just(json!("@@@@")),
        Just(json!(3)),
        Just(json!(null)),
        Just(json!(false)),
    ];
    let stamps = prop_oneof![
        Just(json!("2026-01-15T10:30:00Z")),
        Just(json!("2026-01-15T10:30:00.5+01:00")),
        Just(json!("2026-01-15 10:30:00Z")),
        Just(json!("2026-13-01T00:00:00Z")),
        Just(json!("2026-02-30T00:00:00Z")),
        Just(json!("2026-01-15T10:30:00")),
        Just(json!("now")),
        Just(json!(1_700_000_000)),
    ];
    let prios = prop_oneof![
        (-3i64..14).prop_map(Value::from),
        Just(json!(5.0)),
        Just(json!(5.5)),
        Just(json!("5")),
        Just(json!(null))
    ];
    let dstat = prop_oneof![
        Just(json!("queued")),
        Just(json!("acknowledged")),
        Just(json!("Queued")),
        Just(json!("sent")),
        Just(json!(1))
    ];
    let wstat = prop_oneof![
        Just(json!("in_progress")),
        Just(json!("archived")),
        Just(json!("in-progress")),
        Just(json!(""))
    ];
    let versions = prop_oneof![
        Just(json!("1.0.0")),
        Just(json!("1.7.3")),
        Just(json!("1.0.0-rc.1+build.5")),
        Just(json!("2.0.0")),
        Just(json!("0.9.0")),
        Just(json!("1.0")),
        Just(json!("01.0.0")),
        Just(json!(1)),
    ];
    let meta = prop_oneof![
        Just(json!({"review_cycle": 1})),
        Just(json!([])),
        Just(json!("m")),
        Just(json!(null))
    ];
    let ctype = prop_oneof![
        Just(json!("image/png")),
        Just(json!("text/plain; charset=utf-8")),
        Just(json!("png")),
        Just(json!("/x")),
        Just(json!(7))
    ];
    prop_oneof![
        uuids.prop_map(|v| ("message_id".to_string(), v)),
        aliases.clone().prop_map(|v| ("from_agent".to_string(), v)),
        aliases.prop_map(|v| ("to_agent".to_string(), v)),
        threads.prop_map(|v| ("thread_id".to_string(), v)),
        subjects.prop_map(|v| ("subject".to_string(), v)),
        payloads.prop_map(|v| ("payload".to_string(), v)),
        stamps.prop_map(|v| ("timestamp".to_string(), v)),
        prios.prop_map(|v| ("priority".to_string(), v)),
        dstat.prop_map(|v| ("delivery_status".to_string(), v)),
        wstat.prop_map(|v| ("work_status".to_string(), v)),
        versions.prop_map(|v| ("protocol_version".to_string(), v)),
        meta.prop_map(|v| ("metadata".to_string(), v)),
        ctype.prop_map(|v| ("content_type".to_string(), v)),
    ]
}

fn schema() -> jsonschema::Validator {
    let schema: Value = serde_json::from_str(CXP_PACKET_SCHEMA).unwrap();
    jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    // REQ-004-US-007-007 REQ-004-US-007-008 REQ-004-US-007-009 REQ-004-US-007-001 REQ-004-US-007-002
    // REQ-004-US-007-003 REQ-004-US-007-004 REQ-004-US-007-005 REQ-004-US-007-006
    #[test]
    fn validate_agrees_with_the_json_schema(
        edits in prop::collection::vec(field_value(), 0..4),
        removals in prop::collection::vec(0usize..14, 0..2),
    ) {
        let mut doc: Value = serde_json::from_str(SPEC_EXAMPLE).unwrap();
        let m = doc.as_object_mut().unwrap();
        for (k, v) in edits {
            m.insert(k, v);
        }
        let keys: Vec<String> = m.keys().cloned().collect();
        for r in removals {
            if let Some(k) = keys.get(r) { m.remove(k); }
        }
        let schema_ok = schema().is_valid(&doc);
        let structural = validate_document(&doc);
        let decoded = CxpPacket::from_json(&doc.to_string());
        // The hand-written structural check is the schema.
        prop_assert_eq!(schema_ok, structural.is_ok(), "schema {} vs structural {:?} for {}", schema_ok, structural, doc);
        // validate() adds exactly the rules JSON Schema cannot state: from_agent != to_agent.
        let same_agents = doc.get("from_agent").is_some() && doc.get("from_agent") == doc.get("to_agent");
        if same_agents && schema_ok {
            let err = decoded.unwrap_err();
            prop_assert_eq!(err.field(), Some("to_agent"));
        } else {
            prop_assert_eq!(schema_ok, decoded.is_ok(), "schema {} vs decode {:?} for {}", schema_ok, decoded, doc);
        }
    }

    // REQ-004-US-003-005 REQ-004-US-003-013 REQ-004-US-006-009 REQ-004-US-006-021
    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = CxpPacket::from_bytes(&bytes);
        let _ = CxpPacket::from_json_slice(&bytes);
        if let Ok(s) = std::str::from_utf8(&bytes) {
            let _ = CxpPacket::from_json(s);
        }
    }

    // REQ-004-US-003-005 REQ-004-US-003-013
    #[test]
    fn truncated_and_flipped_encodings_error_not_panic(p in valid_packet(), cut in any::<prop::sample::Index>(), flip in any::<prop::sample::Index>(), bit in 0u8..8) {
        if let Some(p) = p {
            let json = p.to_json().unwrap().into_bytes();
            let bin = p.to_bytes().unwrap();
            for enc in [json, bin] {
                let n = cut.index(enc.len());
                prop_assert!(CxpPacket::from_json_slice(&enc[..n]).is_err());
                prop_assert!(CxpPacket::from_bytes(&enc[..n]).is_err());
                let mut flipped = enc.clone();
                let i = flip.index(flipped.len());
                flipped[i] ^= 1 << bit;
                // Any outcome but a panic is fine; a success must still be a valid packet.
                if let Ok(q) = CxpPacket::from_bytes(&flipped) { prop_assert!(q.validate().is_ok()); }
                if let Ok(q) = CxpPacket::from_json_slice(&flipped) { prop_assert!(q.validate().is_ok()); }
            }
        }
    }
}
