use orchestrata_schemas::events::cxp_traffic::{PacketAcknowledged, PacketSent};
use orchestrata_schemas::events::fields::Json;
use orchestrata_schemas::events::types::{Health, TaskOutcome};
use orchestrata_schemas::events::volk_lifecycle::*;
use uuid::Uuid;

use super::*;
use crate::fold;
use crate::testkit::{env, json, packet, t};

fn registered(seq: u64, secs: i64, alias: &str) -> Envelope {
    env(
        seq,
        secs,
        VolkRegistered {
            alias: alias.into(),
            capabilities: vec!["analyse".into()],
            parent: Some("U:Ox".into()),
            protocols: vec!["cxp/1.0".into()],
            session_id: Some("s1".into()),
            metadata: Json::default(),
        },
    )
}

// REQ-005-FR3-001 REQ-005-FR5-001 REQ-005-FR7-001 REQ-014-022
#[test]
fn volks_fold_registration_health_tasks_escalations_and_leaving() {
    let events = vec![
        registered(0, 0, "U:Vz"),
        env(
            1,
            5,
            VolkHealthChanged {
                alias: "U:Vz".into(),
                old: Health::Healthy,
                new: Health::Degraded,
                details: Some("slow".into()),
            },
        ),
        env(
            2,
            6,
            VolkTaskStarted {
                alias: "U:Vz".into(),
                task_id: "t1".into(),
                thread_id: Some("th".into()),
                description: "chart".into(),
            },
        ),
        env(
            3,
            7,
            VolkTaskStarted {
                alias: "U:Vz".into(),
                task_id: "t2".into(),
                thread_id: None,
                description: "table".into(),
            },
        ),
        env(
            4,
            8,
            VolkTaskCompleted {
                alias: "U:Vz".into(),
                task_id: "t1".into(),
                outcome: TaskOutcome::Succeeded,
                summary: None,
                duration_ms: 2000,
            },
        ),
        env(
            5,
            9,
            VolkEscalated {
                alias: "U:Vz".into(),
                escalated_to: "U:Ox".into(),
                path: vec!["U:Vz".into(), "U:Ox".into(), "U:Ar".into()],
                reason: "design question".into(),
                thread_id: Some("th".into()),
            },
        ),
        env(
            6,
            10,
            VolkSpawned {
                alias: "U:Vz.j1".into(),
                parent: "U:Vz".into(),
                driver: "claude".into(),
                purpose: "render".into(),
                lifespan_ms: Some(60_000),
            },
        ),
        env(
            7,
            11,
            VolkTerminated {
                alias: "U:Vz.j1".into(),
                parent: "U:Vz".into(),
                reason: "done".into(),
            },
        ),
    ];
    let view: VolkView = fold(&events);
    let vz = view.volk("U:Vz").expect("U:Vz");
    assert_eq!(
        (
            vz.capabilities.as_slice(),
            vz.parent.as_deref(),
            vz.session_id.as_deref()
        ),
        (&["analyse".to_string()][..], Some("U:Ox"), Some("s1"))
    );
    assert_eq!(vz.registered_at, t(0));
    assert_eq!(vz.health, Health::Degraded);
    assert_eq!(vz.health_history.len(), 2);
    assert_eq!(vz.active_tasks.keys().collect::<Vec<_>>(), ["t2"]);
    assert_eq!(vz.tasks_succeeded, 1);
    assert_eq!(vz.escalations[0].path.len(), 3);
    assert_eq!(view.last_activity("U:Vz"), Some(t(9)));
    let junior = view.volk("U:Vz.j1").expect("junior");
    assert_eq!(
        (
            junior.status,
            junior.parent.as_deref(),
            junior.driver.as_deref()
        ),
        (VolkStatus::Terminated, Some("U:Vz"), Some("claude"))
    );
    assert_eq!(
        view.children("U:Vz").count(),
        0,
        "terminated juniors are not listed"
    );
    assert_eq!(view.volks(true).count(), 1);
    assert_eq!(view.volks(false).count(), 2);
}

// REQ-005-FR3-001 REQ-014-022
#[test]
fn deregistration_then_reregistration_keeps_history() {
    let events = vec![
        registered(0, 0, "U:Qa"),
        env(
            1,
            1,
            VolkTaskStarted {
                alias: "U:Qa".into(),
                task_id: "t".into(),
                thread_id: None,
                description: "test".into(),
            },
        ),
        env(
            2,
            2,
            VolkDeregistered {
                alias: "U:Qa".into(),
                reason: "maintenance".into(),
            },
        ),
        registered(3, 3, "U:Qa"),
    ];
    let view: VolkView = fold(&events[..3]);
    let qa = view.volk("U:Qa").expect("qa");
    assert_eq!(qa.status, VolkStatus::Deregistered);
    assert!(qa.active_tasks.is_empty());
    assert_eq!(view.volks(true).count(), 0);
    let view: VolkView = fold(&events);
    let qa = view.volk("U:Qa").expect("qa");
    assert_eq!(qa.status, VolkStatus::Registered);
    assert_eq!(qa.registered_at, t(3));
    let statuses: Vec<_> = qa.status_history.iter().map(|h| h.status).collect();
    assert_eq!(
        statuses,
        [
            VolkStatus::Registered,
            VolkStatus::Deregistered,
            VolkStatus::Registered
        ]
    );
}

// REQ-014-023 REQ-004-INTG-011
#[test]
fn packet_activity_counts_and_stream_interleaving_does_not_matter() {
    let lifecycle = vec![registered(0, 0, "U:Ox"), registered(1, 1, "U:Cx")];
    let traffic = vec![
        env(
            0,
            50,
            PacketSent {
                packet: packet(1, "th", "U:Cx", "U:Ox", 5),
            },
        ),
        env(
            1,
            60,
            PacketAcknowledged {
                message_id: Uuid::from_u128(1),
                thread_id: "th".into(),
                acknowledged_by: "U:Ox".into(),
            },
        ),
    ];
    let a: VolkView = fold(lifecycle.iter().chain(&traffic));
    let b: VolkView = fold(traffic.iter().chain(&lifecycle));
    assert_eq!(json(&a), json(&b));
    assert_eq!(a.last_activity("U:Cx"), Some(t(50)));
    assert_eq!(a.last_activity("U:Ox"), Some(t(60)));
    assert_eq!(a.last_activity("U:Nobody"), None);
    let mut c = a.clone();
    assert!(!c.apply(&traffic[1]), "repeat ignored");
    assert_eq!(c.checkpoint().last(Stream::CxpTraffic), Some(1));
    assert_eq!(c.checkpoint().last(Stream::VolkLifecycle), Some(1));
}
