//! The packet, its fields, headers and constructors (US-001, US-002, US-003, US-008).

mod cxp_common;

use cxp_common::*;
use orchestrata_schemas::cxp::*;
use serde_json::json;

// REQ-004-US-001-001 REQ-004-US-001-002 REQ-004-US-001-003 REQ-004-US-001-004
// REQ-004-US-001-005 REQ-004-US-001-006 REQ-004-US-001-007 REQ-004-US-001-008
// REQ-004-US-001-010 REQ-004-US-001-011 REQ-004-US-001-012
// REQ-004-US-006-009 REQ-004-US-006-010 REQ-004-US-006-011 REQ-004-US-006-012 REQ-004-US-006-013
#[test]
fn spec_example_packet_parses_with_every_field() {
    let p = CxpPacket::from_json(SPEC_EXAMPLE).expect("spec example is valid");
    assert_eq!(
        p.message_id().to_string(),
        "550e8400-e29b-41d4-a716-446655440000"
    );
    assert_eq!(p.from_agent().as_str(), "U:Ox");
    assert_eq!(p.to_agent().as_str(), "U:Vz");
    assert_eq!(p.thread_id(), "thread-001");
    assert_eq!(p.subject(), "Generate UserService Implementation");
    assert_eq!(p.payload_json().unwrap()["language"], "Python");
    assert_eq!(p.timestamp().to_rfc3339(), "2026-01-15T10:30:00+00:00");
    assert_eq!(p.priority().value(), 8);
    assert_eq!(p.delivery_status(), DeliveryStatus::Delivered);
    assert_eq!(p.work_status(), WorkStatus::InProgress);
    assert_eq!(p.protocol_version(), &semver::Version::new(1, 0, 0));
}

// REQ-004-US-001-009
#[test]
fn priority_is_an_integer_from_0_to_10() {
    let with = |priority: serde_json::Value| {
        let mut doc: serde_json::Value = serde_json::from_str(SPEC_EXAMPLE).expect("json");
        doc["priority"] = priority;
        CxpPacket::from_json(&doc.to_string())
    };
    for ok in [0, 10] {
        let p = with(serde_json::json!(ok)).expect("in range");
        assert_eq!(p.priority().value(), ok);
    }
    for bad in [
        serde_json::json!(11),
        serde_json::json!(-1),
        serde_json::json!(5.5),
        serde_json::json!("5"),
    ] {
        let err = with(bad.clone()).expect_err("out of range or not an integer");
        assert_eq!(err.field(), Some("priority"), "{bad}: {err}");
    }
}

// REQ-004-US-006-001 REQ-004-US-006-002 REQ-004-US-006-003 REQ-004-US-006-004 REQ-004-US-006-005
#[test]
fn spec_example_round_trips_to_the_same_json() {
    let p = CxpPacket::from_json(SPEC_EXAMPLE).unwrap();
    let out: serde_json::Value = serde_json::from_str(&p.to_json().unwrap()).unwrap();
    let original: serde_json::Value = serde_json::from_str(SPEC_EXAMPLE).unwrap();
    assert_eq!(out, original);
    assert_eq!(CxpPacket::from_json(&p.to_json().unwrap()).unwrap(), p);
}

// REQ-004-US-008-001 REQ-004-US-008-002 REQ-004-US-008-016 REQ-004-US-009-003 REQ-004-US-010-002 REQ-004-US-010-004
#[test]
fn new_packet_gets_uuid_ids_defaults_and_current_version() {
    let a = packet();
    let b = packet();
    assert_ne!(a.message_id(), b.message_id());
    assert_eq!(a.message_id().get_version_num(), 7);
    let thread = uuid::Uuid::parse_str(a.thread_id()).expect("thread id is a UUID");
    assert_eq!(thread.get_version_num(), 7);
    assert_ne!(a.thread_id(), b.thread_id());
    assert_eq!(a.priority(), Priority::NORMAL);
    assert_eq!(a.delivery_status(), DeliveryStatus::Queued);
    assert_eq!(a.work_status(), WorkStatus::Pending);
    assert_eq!(a.protocol_version().to_string(), "1.0.0");
    assert_eq!(a.timestamp(), t(0));
}

// REQ-004-US-008-004 REQ-004-US-008-017
#[test]
fn reply_inherits_the_thread_and_swaps_agents() {
    let p = packet();
    let r = p.reply_at("done", json!({"ok": true}), t(5)).unwrap();
    assert_eq!(r.thread_id(), p.thread_id());
    assert_eq!(r.from_agent(), p.to_agent());
    assert_eq!(r.to_agent(), p.from_agent());
    assert_ne!(r.message_id(), p.message_id());
}

// REQ-004-US-008-005 REQ-004-US-008-006 REQ-004-US-008-007 REQ-004-US-008-008 REQ-004-US-008-009
// REQ-004-US-004-019 REQ-004-US-005-019
#[test]
fn thread_selection_is_chronological_and_filters_work() {
    let first = packet();
    let second = first.reply_at("re", json!({}), t(10)).unwrap();
    let mut third = second.reply_at("re re", json!({}), t(5)).unwrap();
    third
        .transition_delivery(DeliveryStatus::Delivered, t(6))
        .unwrap();
    let other = packet();
    let all = [third.clone(), other, second.clone(), first.clone()];
    let thread = select::thread_packets(&all, first.thread_id());
    let ids: Vec<_> = thread.iter().map(|p| p.message_id()).collect();
    assert_eq!(
        ids,
        [first.message_id(), third.message_id(), second.message_id()]
    );
    assert_eq!(select::from_sender(&all, alias("U:Vz")).count(), 1);
    assert_eq!(select::to_recipient(&all, alias("U:Vz")).count(), 3);
    assert_eq!(
        select::with_delivery_status(&all, DeliveryStatus::Delivered).count(),
        1
    );
    assert_eq!(
        select::with_work_status(&all, WorkStatus::Pending).count(),
        4
    );
}

// REQ-004-US-002-001 REQ-004-US-002-002 REQ-004-US-002-003 REQ-004-US-002-004 REQ-004-US-002-005
// REQ-004-US-002-006 REQ-004-US-002-007 REQ-004-US-002-008 REQ-004-US-002-009 REQ-004-US-002-010
// REQ-004-US-002-011
#[test]
fn get_headers_extracts_every_header() {
    let p = CxpPacket::from_json(SPEC_EXAMPLE).unwrap();
    let h = p.get_headers();
    assert_eq!(h.message_id, p.message_id());
    assert_eq!(h.from_agent, p.from_agent());
    assert_eq!(h.to_agent, p.to_agent());
    assert_eq!(h.thread_id, "thread-001");
    assert_eq!(h.subject, p.subject());
    assert_eq!(h.timestamp, p.timestamp());
    assert_eq!(h.priority.value(), 8);
    assert_eq!(h.delivery_status, DeliveryStatus::Delivered);
    assert_eq!(h.work_status, WorkStatus::InProgress);
    assert_eq!(h.protocol_version, "1.0.0");
    let rebuilt = CxpPacket::from_headers(h, p.payload().clone()).unwrap();
    assert_eq!(rebuilt, p);
}

// REQ-004-US-002-013 REQ-004-US-002-015 REQ-004-US-002-016 REQ-004-US-002-018
#[test]
fn from_headers_rejects_invalid_headers_naming_the_field() {
    let p = packet();
    let mut h = p.get_headers();
    h.subject = String::new();
    let err = CxpPacket::from_headers(h, p.payload().clone()).unwrap_err();
    assert_eq!(err.field(), Some("subject"));
    let mut h = p.get_headers();
    h.to_agent = h.from_agent;
    let err = CxpPacket::from_headers(h, p.payload().clone()).unwrap_err();
    assert_eq!(err.field(), Some("to_agent"));
    let mut h = p.get_headers();
    h.protocol_version = "one".into();
    let err = CxpPacket::from_headers(h, p.payload().clone()).unwrap_err();
    assert_eq!(err.field(), Some("protocol_version"));
}

// REQ-004-US-002-023
#[test]
fn message_id_and_agents_are_immutable() {
    let mut p = packet();
    for f in ["message_id", "from_agent", "to_agent"] {
        let err = p.set_header(f, &json!("U:Qa"), t(1)).unwrap_err();
        assert_eq!(
            err,
            CxpError::ImmutableField(match f {
                "message_id" => "message_id",
                "from_agent" => "from_agent",
                _ => "to_agent",
            })
        );
    }
    assert_eq!(p.from_agent().as_str(), "U:Ox");
    let err = p.set_header("nonsense", &json!(1), t(1)).unwrap_err();
    assert_eq!(err.field(), Some("header"));
}

// REQ-004-US-002-019 REQ-004-US-002-020 REQ-004-US-002-021 REQ-004-US-002-022 REQ-004-US-002-024
#[test]
fn header_setters_validate_and_restamp() {
    let mut p = packet();
    p.set_header("delivery_status", &json!("delivered"), t(3))
        .unwrap();
    assert_eq!(p.delivery_status(), DeliveryStatus::Delivered);
    assert_eq!(p.timestamp(), t(3));
    p.set_header("work_status", &json!("in_progress"), t(4))
        .unwrap();
    assert_eq!(p.timestamp(), t(4));
    p.set_header("priority", &json!(7), t(5)).unwrap();
    assert_eq!(p.priority(), Priority::HIGH);
    assert_eq!(p.timestamp(), t(5));
    let err = p.set_header("priority", &json!(11), t(6)).unwrap_err();
    assert_eq!(err.field(), Some("priority"));
    let err = p
        .set_header("delivery_status", &json!("lost"), t(6))
        .unwrap_err();
    assert_eq!(err.field(), Some("delivery_status"));
    let err = p.set_header("work_status", &json!(3), t(6)).unwrap_err();
    assert_eq!(err.field(), Some("work_status"));
    // An event time before the packet's timestamp is refused.
    let err = p.set_priority(Priority::LOW, t(1)).unwrap_err();
    assert_eq!(err.field(), Some("timestamp"));
    assert_eq!(p.timestamp(), t(5));
}

// REQ-004-US-003-001 REQ-004-US-003-002 REQ-004-US-003-003 REQ-004-US-003-006
#[test]
fn json_payloads_object_array_nested_unicode_round_trip() {
    for payload in [
        json!({"a": 1}),
        json!([1, "two", {"three": [3]}]),
        json!({"deep": {"er": {"est": [{"x": null}]}}}),
        json!({"text": "Grüße, 世界 🎉", "ключ": "значение"}),
    ] {
        let p =
            CxpPacket::new_at(alias("U:Ox"), alias("U:Vz"), "s", payload.clone(), t(0)).unwrap();
        let back = CxpPacket::from_json(&p.to_json().unwrap()).unwrap();
        assert_eq!(back.payload_json().unwrap(), payload);
        let back = CxpPacket::from_bytes(&p.to_bytes().unwrap()).unwrap();
        assert_eq!(back.payload_json().unwrap(), payload);
    }
}

// REQ-004-US-003-008 REQ-004-US-003-009 REQ-004-US-003-010 REQ-004-US-003-012 REQ-004-US-006-006 REQ-004-US-006-014
#[test]
fn binary_payload_is_base64_in_json_with_content_type() {
    let bytes = vec![0u8, 1, 2, 254, 255];
    let p = CxpPacket::new_at(alias("U:Ox"), alias("U:Vz"), "blob", bytes.clone(), t(0))
        .unwrap()
        .with_content_type("application/octet-stream")
        .unwrap();
    let v = p.to_json_value().unwrap();
    assert_eq!(v["payload"], "AAEC/v8=");
    assert_eq!(v["content_type"], "application/octet-stream");
    let back = CxpPacket::from_json(&p.to_json().unwrap()).unwrap();
    assert_eq!(back.payload_binary().unwrap(), &bytes[..]);
    assert_eq!(back.content_type(), Some("application/octet-stream"));
}

// REQ-004-US-003-020 REQ-004-US-003-021 REQ-004-US-003-022 REQ-004-US-003-023 REQ-004-US-003-024
#[test]
fn payload_accessors_and_type_mismatch() {
    let p = packet();
    assert!(p.payload().is_json() && !p.payload().is_binary());
    assert_eq!(p.payload_binary().unwrap_err().field(), Some("payload"));
    let b = CxpPacket::new_at(alias("U:Ox"), alias("U:Vz"), "b", vec![1u8], t(0)).unwrap();
    assert!(b.payload().is_binary());
    assert_eq!(b.payload_json().unwrap_err().field(), Some("payload"));
}

// REQ-004-US-001-029 REQ-004-US-001-030 REQ-004-US-001-028
#[test]
fn equality_hash_and_debug() {
    use std::collections::HashSet;
    let p = packet();
    let q = p.clone();
    assert_eq!(p, q);
    assert_ne!(p, packet());
    let set: HashSet<_> = [p.clone(), q].into_iter().collect();
    assert_eq!(set.len(), 1);
    let dbg = format!("{p:?}");
    for needle in [
        "message_id",
        "from_agent",
        "U:Ox",
        "subject",
        "payload",
        "priority",
    ] {
        assert!(dbg.contains(needle), "{needle} missing in {dbg}");
    }
}

// REQ-004-PERF-010
#[test]
fn packet_memory_without_payload_is_under_one_kilobyte() {
    let p = CxpPacket::from_json(SPEC_EXAMPLE).unwrap();
    let bytes = p.memory_without_payload();
    assert!(bytes < 1024, "packet uses {bytes} bytes without payload");
    assert!(bytes >= std::mem::size_of::<CxpPacket>());
}
