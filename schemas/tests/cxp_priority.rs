//! Priority (US-009), versioning (US-010) and review subjects (US-011).

mod cxp_common;

use cxp_common::*;
use orchestrata_schemas::cxp::review::*;
use orchestrata_schemas::cxp::*;
use semver::Version;
use serde_json::json;

fn with_priority(p: u8, secs: i64) -> CxpPacket {
    CxpPacket::new_at(alias("U:Ox"), alias("U:Vz"), "s", json!({}), t(secs))
        .unwrap()
        .with_priority(Priority::new(i64::from(p)).unwrap())
}

// REQ-004-US-009-001 REQ-004-US-009-002 REQ-004-US-009-003 REQ-004-US-009-004
#[test]
fn priority_range_constants_and_default() {
    assert_eq!(
        [
            Priority::LOW,
            Priority::NORMAL,
            Priority::HIGH,
            Priority::URGENT
        ]
        .map(Priority::value),
        [3, 5, 7, 10]
    );
    assert_eq!(Priority::default(), Priority::NORMAL);
    assert!(Priority::new(0).is_ok() && Priority::new(10).is_ok());
    for bad in [-1, 11, i64::MAX] {
        assert_eq!(Priority::new(bad).unwrap_err().field(), Some("priority"));
    }
}

// REQ-004-US-009-005 REQ-004-US-009-006 REQ-004-US-009-007 REQ-004-US-009-008
#[test]
fn serving_order_is_priority_desc_then_timestamp_asc() {
    let a = with_priority(5, 3);
    let b = with_priority(9, 5);
    let c = with_priority(5, 1);
    let d = with_priority(0, 0);
    let mut v = vec![a.clone(), b.clone(), c.clone(), d.clone()];
    v.sort_by(CxpPacket::compare_priority);
    assert_eq!(v, [b.clone(), c.clone(), a.clone(), d.clone()]);
    let mut q: PriorityQueue = [d.clone(), a.clone()].into_iter().collect();
    q.push(b.clone());
    q.push(c.clone());
    assert_eq!(q.len(), 4);
    assert_eq!(q.peek(), Some(&b));
    let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
    assert_eq!(order, [b, c, a, d]);
    assert!(q.is_empty());
}

// REQ-004-US-009-009 REQ-004-US-009-010 REQ-004-US-009-011 REQ-004-US-009-013 REQ-004-US-009-018
#[test]
fn escalation_demotion_and_the_anti_manipulation_rule() {
    let ox = alias("U:Ox");
    let vz = alias("U:Vz");
    let policy =
        PriorityPolicy::with_system_senders([ox]).with_cap(alias("U:Qa"), Priority::NORMAL);
    let mut p = with_priority(5, 0);
    policy.escalate(&mut p, vz, 2, t(1)).unwrap();
    assert_eq!(p.priority(), Priority::HIGH);
    // A non-system Volk may not push past HIGH; the attempt is refused, not clamped.
    let err = policy.escalate(&mut p, vz, 1, t(2)).unwrap_err();
    assert_eq!(err.field(), Some("priority"));
    assert_eq!(p.priority(), Priority::HIGH);
    policy.apply(&mut p, ox, Priority::URGENT, t(3)).unwrap();
    assert_eq!(p.priority(), Priority::URGENT);
    policy.demote(&mut p, 20, t(4)).unwrap();
    assert_eq!(p.priority(), Priority::MIN);
    assert_eq!(p.timestamp(), t(4));
    // Per-Volk cap.
    assert_eq!(policy.ceiling(alias("U:Qa")), Priority::NORMAL);
    assert!(policy.check(alias("U:Qa"), Priority::HIGH).is_err());
    // Packet setter without policy validates the range through Priority itself.
    p.set_priority(Priority::LOW, t(5)).unwrap();
    assert_eq!(p.priority(), Priority::LOW);
}

// REQ-004-US-009-014 REQ-004-US-009-015 REQ-004-US-009-016 REQ-004-US-009-017
#[test]
fn class_policies() {
    let policy = PriorityPolicy::with_system_senders([alias("U:Ox")]);
    assert_eq!(
        policy
            .for_class(alias("U:Ox"), MessageClass::System)
            .unwrap(),
        Priority::URGENT
    );
    assert_eq!(
        policy
            .for_class(alias("U:Vz"), MessageClass::Error)
            .unwrap(),
        Priority::HIGH
    );
    assert_eq!(
        policy.for_class(alias("U:Vz"), MessageClass::User).unwrap(),
        Priority::NORMAL
    );
    assert_eq!(
        policy
            .for_class(alias("U:Vz"), MessageClass::Background)
            .unwrap(),
        Priority::LOW
    );
    // Claiming the system class is manipulation for a non-system sender.
    assert!(policy
        .for_class(alias("U:Vz"), MessageClass::System)
        .is_err());
}

// REQ-004-US-010-001 REQ-004-US-010-005 REQ-004-US-010-006 REQ-004-US-010-007 REQ-004-US-010-008
// REQ-004-US-010-009 REQ-004-US-007-017
#[test]
fn compatibility_rules() {
    assert_eq!(CURRENT_VERSION, Version::new(1, 0, 0));
    assert_eq!(
        check_compatibility(&Version::new(1, 0, 7)).unwrap(),
        Compatibility::Compatible
    );
    assert!(matches!(
        check_compatibility(&Version::new(1, 3, 0)).unwrap(),
        Compatibility::CompatibleWithWarning(w) if w.contains("newer")
    ));
    // Older clients against a newer server: accepted with a note.
    assert!(matches!(
        check_compatibility_with(&Version::new(1, 0, 0), &Version::new(1, 2, 0)).unwrap(),
        Compatibility::CompatibleWithWarning(w) if w.contains("older")
    ));
    for v in [Version::new(0, 9, 0), Version::new(2, 0, 0)] {
        assert_eq!(
            check_compatibility(&v).unwrap_err().field(),
            Some("protocol_version")
        );
    }
    // A newer-minor packet decodes; a new-major packet does not.
    assert!(CxpPacket::from_json(&example_with(|m| {
        m.insert("protocol_version".into(), json!("1.4.2"));
    }))
    .is_ok());
}

// REQ-004-US-010-010 REQ-004-US-010-011 REQ-004-US-010-012 REQ-004-US-010-013
#[test]
fn negotiation_picks_the_highest_common_version() {
    let v = |s: &str| Version::parse(s).unwrap();
    assert_eq!(SUPPORTED_VERSIONS.to_vec(), [v("1.0.0")]);
    assert_eq!(
        negotiate(
            &[v("1.0.0"), v("1.1.0")],
            &[v("1.0.0"), v("1.1.0"), v("2.0.0")]
        )
        .unwrap(),
        v("1.1.0")
    );
    // No exact match: fall back to the older of the best same-major pair.
    assert_eq!(
        negotiate(&[v("1.2.0")], &[v("1.1.0"), v("0.9.0")]).unwrap(),
        v("1.1.0")
    );
    let err = negotiate(&[v("1.0.0")], &[v("2.0.0"), v("3.1.0")]).unwrap_err();
    assert_eq!(err.field(), Some("protocol_version"));
}

// REQ-004-US-010-015 REQ-004-US-010-016 REQ-004-US-010-017 REQ-004-US-010-018
#[test]
fn upgrade_preserves_fields_and_fills_defaults() {
    let mut doc: serde_json::Value = serde_json::from_str(SPEC_EXAMPLE).unwrap();
    doc.as_object_mut().unwrap().remove("priority");
    doc["x_extension"] = json!("kept");
    let up = upgrade_packet(doc.clone(), &Version::new(1, 1, 0)).unwrap();
    assert_eq!(up["protocol_version"], "1.1.0");
    assert_eq!(up["priority"], 5);
    assert_eq!(up["metadata"], json!({}));
    assert_eq!(up["x_extension"], "kept");
    for k in [
        "message_id",
        "from_agent",
        "to_agent",
        "thread_id",
        "subject",
        "payload",
        "timestamp",
    ] {
        assert_eq!(up[k], doc[k], "{k}");
    }
    let p = CxpPacket::from_json(&up.to_string()).unwrap();
    assert_eq!(p.protocol_version(), &Version::new(1, 1, 0));
    assert!(upgrade_packet(doc.clone(), &Version::new(2, 0, 0)).is_err());
    let newer = upgrade_packet(doc.clone(), &Version::new(1, 1, 0)).unwrap();
    assert_eq!(
        upgrade_packet(newer, &Version::new(1, 0, 0))
            .unwrap_err()
            .field(),
        Some("protocol_version")
    );
}

fn review(
    from: &str,
    to: &str,
    subject: &str,
    payload: serde_json::Value,
) -> Result<CxpPacket, CxpError> {
    let p = CxpPacket::new_at(alias(from), alias(to), subject, payload, t(0))?;
    p.validate()?;
    Ok(p)
}

fn spec_fix_issues() -> serde_json::Value {
    json!({
        "review_id": "rev_123",
        "file_path": "packages/kernel.py",
        "issues": [
            {"type": "style", "rule": "E501", "line": 42, "message": "Line too long (92 > 88 chars)", "severity": "warning"},
            {"type": "complexity", "rule": "C101", "line": 156, "function": "handle_packet",
             "message": "Function too long (67 > 40 lines)", "severity": "warning"}
        ],
        "summary": {"total_issues": 5, "errors": 0, "warnings": 4, "infos": 1},
        "auto_fixable": true
    })
}

// REQ-004-US-011
#[test]
fn fix_issues_payload_is_typed_and_validated() {
    let p = review("U:Qa", "U:Vz", "fix_issues", spec_fix_issues()).unwrap();
    let Some(ReviewPayload::FixIssues(f)) = p.review_payload().unwrap() else {
        panic!("typed payload")
    };
    assert_eq!(f.issues[1].function.as_deref(), Some("handle_packet"));
    assert_eq!(f.issues[0].severity, Severity::Warning);
    assert!(f.auto_fixable);
    let round = CxpPacket::from_bytes(&p.to_bytes().unwrap()).unwrap();
    assert_eq!(round, p);

    let mut bad = spec_fix_issues();
    bad["issues"][1]["line"] = json!("x");
    let err = review("U:Qa", "U:Vz", "fix_issues", bad).unwrap_err();
    assert!(
        matches!(&err, CxpError::InvalidPayloadField { path, .. } if path == "issues[1].line"),
        "{err}"
    );
    let mut bad = spec_fix_issues();
    bad["issues"][0]["severity"] = json!("fatal");
    let err = review("U:Qa", "U:Vz", "fix_issues", bad).unwrap_err();
    assert!(
        matches!(&err, CxpError::InvalidPayloadField { path, .. } if path == "issues[0].severity"),
        "{err}"
    );
    let mut bad = spec_fix_issues();
    bad.as_object_mut().unwrap().remove("review_id");
    assert!(review("U:Qa", "U:Vz", "fix_issues", bad)
        .unwrap_err()
        .to_string()
        .contains("review_id"));
    let mut bad = spec_fix_issues();
    bad["summary"]["total_issues"] = json!(6);
    let err = review("U:Qa", "U:Vz", "fix_issues", bad).unwrap_err();
    assert!(
        matches!(&err, CxpError::InvalidPayloadField { path, .. } if path == "summary.total_issues"),
        "{err}"
    );
    // Route: fix_issues goes from U:Qa to U:Vz only.
    assert_eq!(
        review("U:Ox", "U:Vz", "fix_issues", spec_fix_issues())
            .unwrap_err()
            .field(),
        Some("from_agent")
    );
    assert_eq!(
        review("U:Qa", "U:Ox", "fix_issues", spec_fix_issues())
            .unwrap_err()
            .field(),
        Some("to_agent")
    );
    // Decoding a packet runs the same checks.
    let mut v = p.to_json_value().unwrap();
    v["payload"]["issues"][0]["line"] = json!(0);
    let err = CxpPacket::from_json(&v.to_string()).unwrap_err();
    assert!(
        matches!(&err, CxpError::InvalidPayloadField { path, .. } if path == "issues[0].line"),
        "{err}"
    );
}

// REQ-004-US-011
#[test]
fn review_code_and_review_complete_subjects() {
    let rc = review(
        "U:Vz",
        "U:Qa",
        "review_code",
        json!({"file_path": "src/lib.rs"}),
    )
    .unwrap();
    assert!(
        matches!(rc.review_payload().unwrap(), Some(ReviewPayload::ReviewCode(r)) if r.file_path == "src/lib.rs")
    );
    assert!(review("U:Vz", "U:Qa", "review_code", json!({"file_path": " "})).is_err());
    assert_eq!(
        review("U:Qa", "U:Vz", "review_code", json!({"file_path": "a"}))
            .unwrap_err()
            .field(),
        Some("from_agent")
    );
    let done = review(
        "U:Qa",
        "U:Ox",
        "review_complete",
        json!({"review_id": "rev_123", "status": "escalated", "cycles": 3}),
    )
    .unwrap()
    .with_metadata(METADATA_REVIEW_CYCLE, json!(3));
    assert_eq!(done.review_cycle(), DEFAULT_MAX_REVIEW_CYCLES);
    assert!(matches!(
        done.review_payload().unwrap(),
        Some(ReviewPayload::ReviewComplete(ReviewComplete {
            status: ReviewOutcome::Escalated,
            cycles: 3,
            ..
        }))
    ));
    assert!(is_review_escalation_target(done.to_agent()));
    assert!(review(
        "U:Qa",
        "U:Ox",
        "review_complete",
        json!({"review_id": "r", "status": "meh", "cycles": 1})
    )
    .is_err());
    // Binary payload under a review subject is refused, naming payload.
    let b = CxpPacket::new_at(alias("U:Vz"), alias("U:Qa"), "review_code", vec![1u8], t(0))
        .unwrap()
        .with_content_type("text/plain")
        .unwrap();
    assert_eq!(b.validate().unwrap_err().field(), Some("payload"));
    // Other subjects carry no typed payload.
    assert_eq!(packet().review_payload().unwrap(), None);
}
