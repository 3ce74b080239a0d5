//! Validation (US-001 validation ids, US-003 limits, US-007) and the testing checklist's
//! invalid inputs, each rejected with the right field named.

mod cxp_common;

use cxp_common::*;
use orchestrata_schemas::cxp::*;
use serde_json::json;

fn rejected_field(doc: &str) -> String {
    let err = CxpPacket::from_json(doc).expect_err("must be rejected");
    err.field().unwrap_or("<none>").to_string()
}

// REQ-004-US-007-001 REQ-004-US-006-016 REQ-004-US-002-016 REQ-004-US-003-014
#[test]
fn each_missing_required_field_is_named() {
    for field in [
        "message_id",
        "from_agent",
        "to_agent",
        "thread_id",
        "subject",
        "payload",
        "timestamp",
        "delivery_status",
        "work_status",
        "protocol_version",
    ] {
        let doc = example_with(|m| {
            m.remove(field);
        });
        let err = CxpPacket::from_json(&doc).unwrap_err();
        assert_eq!(err, CxpError::MissingField(field_static(field)), "{field}");
    }
    // A null payload is refused too.
    assert_eq!(
        rejected_field(&example_with(|m| {
            m.insert("payload".into(), json!(null));
        })),
        "payload"
    );
}

fn field_static(f: &str) -> &'static str {
    [
        "message_id",
        "from_agent",
        "to_agent",
        "thread_id",
        "subject",
        "payload",
        "timestamp",
        "delivery_status",
        "work_status",
        "protocol_version",
    ]
    .into_iter()
    .find(|x| *x == f)
    .expect("known field")
}

// REQ-004-US-001-013 REQ-004-US-001-014 REQ-004-US-001-015 REQ-004-US-001-016 REQ-004-US-001-017
// REQ-004-US-001-018 REQ-004-US-001-019 REQ-004-US-001-020 REQ-004-US-001-021 REQ-004-US-001-022
// REQ-004-US-001-023 REQ-004-US-001-024 REQ-004-US-001-027 REQ-004-US-002-014 REQ-004-US-002-017
// REQ-004-US-007-002 REQ-004-US-007-003 REQ-004-US-007-004 REQ-004-US-007-005 REQ-004-US-007-006
// REQ-004-US-007-012 REQ-004-US-007-015 REQ-004-US-007-016 REQ-004-US-008-003 REQ-004-US-009-004
// REQ-004-US-010-003 REQ-004-US-003-015 REQ-004-US-003-016 REQ-004-US-003-017 REQ-004-US-003-019
#[test]
fn checklist_invalid_inputs_are_rejected_naming_the_field() {
    let cases: Vec<(&str, serde_json::Value, &str)> = vec![
        ("message_id", json!("not-a-uuid"), "message_id"),
        (
            "message_id",
            json!("550e8400e29b41d4a716446655440000"),
            "message_id",
        ),
        ("message_id", json!(42), "message_id"),
        ("from_agent", json!("Ox"), "from_agent"),
        ("from_agent", json!("U:ox"), "from_agent"),
        ("from_agent", json!("U:Oxx"), "from_agent"),
        ("to_agent", json!("U:1a"), "to_agent"),
        ("to_agent", json!("U:Ox"), "to_agent"),
        ("thread_id", json!(""), "thread_id"),
        ("thread_id", json!("has space"), "thread_id"),
        ("thread_id", json!("x".repeat(129)), "thread_id"),
        ("subject", json!(""), "subject"),
        ("subject", json!("   "), "subject"),
        ("subject", json!("s".repeat(201)), "subject"),
        ("payload", json!(7), "payload"),
        ("payload", json!(true), "payload"),
        ("payload", json!("***not base64***"), "payload"),
        ("timestamp", json!("yesterday"), "timestamp"),
        ("timestamp", json!("2026-01-15 10:30:00Z"), "timestamp"),
        ("timestamp", json!("2026-02-30T10:30:00Z"), "timestamp"),
        ("timestamp", json!("2026-01-15T10:30:00"), "timestamp"),
        ("priority", json!(11), "priority"),
        ("priority", json!(-1), "priority"),
        ("priority", json!(5.5), "priority"),
        ("priority", json!("high"), "priority"),
        ("priority", json!(null), "priority"),
        ("delivery_status", json!("lost"), "delivery_status"),
        ("delivery_status", json!("QUEUED"), "delivery_status"),
        ("work_status", json!("done"), "work_status"),
        ("protocol_version", json!("1.0"), "protocol_version"),
        ("protocol_version", json!("v1.0.0"), "protocol_version"),
        ("protocol_version", json!("2.0.0"), "protocol_version"),
        ("metadata", json!([1]), "metadata"),
        ("content_type", json!("plain"), "content_type"),
        ("tracking", json!({"bogus": 1}), "tracking"),
    ];
    for (field, value, named) in cases {
        let doc = example_with(|m| {
            m.insert(field.into(), value.clone());
        });
        assert_eq!(rejected_field(&doc), named, "{field} = {value}");
        // The hand-written schema check names the same field.
        let v: serde_json::Value = serde_json::from_str(&doc).unwrap();
        if field != "to_agent" || value != json!("U:Ox") {
            let err = validate_document(&v).expect_err("schema check must reject");
            assert_eq!(err.field(), Some(named), "schema: {field} = {value}");
        }
    }
    // Binary payload without content type: the cross-field rule names content_type.
    let doc = example_with(|m| {
        m.insert("payload".into(), json!("AAEC"));
    });
    assert_eq!(rejected_field(&doc), "content_type");
    // Error messages explain the reason.
    let err = CxpPacket::from_json(&example_with(|m| {
        m.insert("subject".into(), json!("s".repeat(201)));
    }))
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid field `subject`: 201 characters, at most 200 allowed"
    );
}

// REQ-004-US-003-005 REQ-004-US-003-013
#[test]
fn malformed_documents_are_decode_errors() {
    for doc in ["", "{", "[]", "null", "{\"message_id\": }", "\u{0}"] {
        let err = CxpPacket::from_json(doc).unwrap_err();
        assert!(
            matches!(err, CxpError::Decode { format: "json", .. }),
            "{doc:?}: {err}"
        );
    }
}

// REQ-004-US-003-007 REQ-004-US-003-011 REQ-004-US-003-018
#[test]
fn oversized_payloads_are_rejected() {
    let big = "x".repeat(MAX_JSON_PAYLOAD_BYTES);
    let err = CxpPacket::new_at(alias("U:Ox"), alias("U:Vz"), "s", json!([big]), t(0)).unwrap_err();
    assert!(matches!(
        err,
        CxpError::PayloadTooLarge {
            kind: "json",
            limit: MAX_JSON_PAYLOAD_BYTES,
            ..
        }
    ));
    assert_eq!(err.field(), Some("payload"));
    let err = CxpPacket::new_at(
        alias("U:Ox"),
        alias("U:Vz"),
        "s",
        vec![0u8; MAX_BINARY_PAYLOAD_BYTES + 1],
        t(0),
    )
    .unwrap_err();
    assert!(matches!(
        err,
        CxpError::PayloadTooLarge { kind: "binary", .. }
    ));
    // Just under the JSON limit is fine.
    let ok = "x".repeat(MAX_JSON_PAYLOAD_BYTES - 10);
    assert!(CxpPacket::new_at(alias("U:Ox"), alias("U:Vz"), "s", json!([ok]), t(0)).is_ok());
}

// REQ-004-US-007-008 REQ-004-US-007-018 REQ-004-US-007-019 REQ-004-US-007-020 REQ-004-US-007-021
// REQ-004-US-007-010 REQ-004-US-003-004
#[test]
fn custom_validators_run_per_field_as_chains() {
    let mut reg = ValidatorRegistry::new();
    reg.register("subject", "no-shouting", |p| {
        if p.subject().chars().any(char::is_lowercase) {
            Ok(())
        } else {
            Err("subject is all caps".into())
        }
    })
    .register("subject", "no-todo", |p| {
        if p.subject().contains("TODO") {
            Err("subject mentions TODO".into())
        } else {
            Ok(())
        }
    })
    .register("payload", "has-task", |p| match p.payload_json() {
        Ok(v) if v.get("task").is_some_and(|t| t.is_string()) => Ok(()),
        _ => Err("payload needs a string `task`".into()),
    });
    assert_eq!(reg.chain("subject"), ["no-shouting", "no-todo"]);
    assert!(reg.validate(&packet()).is_ok());
    let shouting = CxpPacket::new_at(
        alias("U:Ox"),
        alias("U:Vz"),
        "TODO NOW",
        json!({"task": "x"}),
        t(0),
    )
    .unwrap();
    let err = reg.validate(&shouting).unwrap_err();
    assert_eq!(
        err,
        CxpError::Validator {
            field: "subject".into(),
            validator: "no-shouting".into(),
            reason: "subject is all caps".into()
        }
    );
    let todo = CxpPacket::new_at(
        alias("U:Ox"),
        alias("U:Vz"),
        "Fix TODO",
        json!({"task": "x"}),
        t(0),
    )
    .unwrap();
    assert_eq!(
        reg.validate(&todo).unwrap_err().to_string(),
        "field `subject` rejected by validator `no-todo`: subject mentions TODO"
    );
    let no_task =
        CxpPacket::new_at(alias("U:Ox"), alias("U:Vz"), "fine", json!({"x": 1}), t(0)).unwrap();
    assert_eq!(reg.validate(&no_task).unwrap_err().field(), Some("payload"));
}

// REQ-004-US-007-007 REQ-004-US-007-009 REQ-004-US-006-008
#[test]
fn codec_output_is_valid_against_the_json_schema() {
    let schema: serde_json::Value = serde_json::from_str(CXP_PACKET_SCHEMA).unwrap();
    let validator = jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .expect("schema compiles");
    let mut p = packet().with_metadata("review_cycle", json!(1));
    p.transition_delivery(DeliveryStatus::Delivered, t(1))
        .unwrap();
    p.start_work(alias("U:Vz"), t(2)).unwrap();
    p.add_note(alias("U:Vz"), "n", t(3)).unwrap();
    let bin = CxpPacket::new_at(alias("U:Ox"), alias("U:Vz"), "b", vec![9u8; 10], t(0))
        .unwrap()
        .with_content_type("image/png")
        .unwrap();
    for doc in [
        SPEC_EXAMPLE.to_string(),
        p.to_json().unwrap(),
        p.to_json_pretty().unwrap(),
        bin.to_json().unwrap(),
    ] {
        let v: serde_json::Value = serde_json::from_str(&doc).unwrap();
        let errors: Vec<_> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:?}");
        assert!(validate_document(&v).is_ok());
    }
    // And the schema rejects a broken document.
    let bad: serde_json::Value = serde_json::from_str(&example_with(|m| {
        m.insert("priority".into(), json!(12));
    }))
    .unwrap();
    assert!(!validator.is_valid(&bad));
}
