//! Property: `gateway.replay` over the same log answers the same events whatever was
//! replayed before, on this gateway or another, and equals a reference filter computed
//! directly from the full history (issue 15, item 4). Random histories of packets sent
//! between random Volks and their later transitions, interleaved; random ranges and
//! filters, replayed through a real gateway over loopback WebSocket in random orders.

mod support;

use std::collections::BTreeSet;
use std::sync::Arc;

use chrono::Utc;
use orchestrata::config::LogConfig;
use orchestrata::gateway::{self, Services};
use orchestrata::log::EventLog;
use orchestrata_schemas::cxp::{DeliveryStatus, WorkStatus};
use orchestrata_schemas::events::cxp_traffic::{
    PacketAcknowledged, PacketDelivered, PacketSent, WorkStatusChanged,
};
use orchestrata_schemas::events::fields::Json;
use orchestrata_schemas::events::types::{Packet, PacketPayload};
use orchestrata_schemas::events::EventRecord;
use proptest::prelude::*;
use serde_json::{json, Value};
use support::ws::{test_config, Ws, TOKEN};
use uuid::Uuid;

const VOLKS: [&str; 4] = ["U:Pm", "U:Cx", "U:Vz", "U:Qa"];

/// One step of a history.
#[derive(Debug, Clone)]
enum Step {
    /// Packet `id` sent from `from` to `to` (a repeated id: a duplicate send).
    Send { id: u8, from: usize, to: usize },
    /// Transition `kind` (delivered, acknowledged, resolved) of packet `id`, possibly
    /// never sent, naming Volk `actor`.
    Move { kind: u8, id: u8, actor: usize },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (0u8..8, 0..VOLKS.len(), 0..VOLKS.len()).prop_map(|(id, from, to)| Step::Send {
            id,
            from,
            to
        }),
        (0u8..3, 0u8..8, 0..VOLKS.len()).prop_map(|(kind, id, actor)| Step::Move {
            kind,
            id,
            actor
        }),
    ]
}

/// A filter of a query.
#[derive(Debug, Clone)]
enum Pick {
    Volk(usize),
    Subject(u8),
    Status(u8),
}

const STATUSES: [&str; 3] = ["queued", "delivered", "acknowledged"];

fn pick() -> impl Strategy<Value = Pick> {
    prop_oneof![
        (0..VOLKS.len()).prop_map(Pick::Volk),
        (0u8..8).prop_map(Pick::Subject),
        (0u8..3).prop_map(Pick::Status),
    ]
}

impl Pick {
    fn filters(&self) -> Value {
        match self {
            Pick::Volk(v) => json!({"volk_id": VOLKS[*v]}),
            Pick::Subject(s) => json!({"subject": format!("subject {s}")}),
            Pick::Status(s) => json!({"delivery_status": STATUSES[*s as usize]}),
        }
    }
}

fn uuid(id: u8) -> Uuid {
    Uuid::from_u128(u128::from(id) + 1)
}

fn record(step: &Step) -> EventRecord {
    let now = Utc::now();
    match *step {
        Step::Send { id, from, to } => {
            let packet = Packet {
                message_id: uuid(id),
                from_agent: VOLKS[from].into(),
                to_agent: VOLKS[to].into(),
                thread_id: "t".into(),
                subject: format!("subject {id}"),
                payload: PacketPayload::Json(json!({"n": id}).into()),
                created_at: now,
                priority: 5,
                delivery_status: DeliveryStatus::Queued,
                work_status: WorkStatus::Pending,
                protocol_version: "1.0.0".into(),
                in_reply_to: None,
                metadata: Json(json!({})),
            };
            EventRecord::new("test", "t", PacketSent { packet }, now)
        }
        Step::Move { kind, id, actor } => {
            let (message_id, thread_id, who) = (uuid(id), "t".to_owned(), VOLKS[actor]);
            match kind {
                0 => EventRecord::new(
                    "test",
                    "t",
                    PacketDelivered {
                        message_id,
                        thread_id,
                        to_agent: who.into(),
                    },
                    now,
                ),
                1 => EventRecord::new(
                    "test",
                    "t",
                    PacketAcknowledged {
                        message_id,
                        thread_id,
                        acknowledged_by: who.into(),
                    },
                    now,
                ),
                _ => EventRecord::new(
                    "test",
                    "t",
                    WorkStatusChanged {
                        message_id,
                        thread_id,
                        old: WorkStatus::Pending,
                        new: WorkStatus::InProgress,
                        changed_by: who.into(),
                        assigned_to: None,
                        resolution: None,
                        notes: None,
                    },
                    now,
                ),
            }
        }
    }
}

/// The reference: whether event `at` of the history passes `pick`, computed from the
/// steps alone. A transition concerns the parties and subject of its packet's first
/// send earlier in the history, plus the Volk it names (delivered to / acknowledged by).
fn passes(steps: &[Step], at: usize, pick: &Pick) -> bool {
    let mut volks = BTreeSet::new();
    let mut subject = None;
    let status = match steps[at] {
        Step::Send { id, from, to } => {
            volks.extend([from, to]);
            subject = Some(id);
            Some("queued")
        }
        Step::Move { kind, id, actor } => {
            if kind < 2 {
                volks.insert(actor);
            }
            let first = steps[..at].iter().find_map(|s| match *s {
                Step::Send { id: i, from, to } if i == id => Some((from, to)),
                _ => None,
            });
            if let Some((from, to)) = first {
                volks.extend([from, to]);
                subject = Some(id);
            }
            [Some("delivered"), Some("acknowledged"), None][kind as usize]
        }
    };
    match pick {
        Pick::Volk(v) => volks.contains(v),
        Pick::Subject(s) => subject == Some(*s),
        Pick::Status(s) => status == Some(STATUSES[*s as usize]),
    }
}

/// The sequences a replay answered.
fn sequences(result: &Value) -> Vec<u64> {
    result["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["sequence"].as_u64().expect("sequence"))
        .collect()
}

async fn replay_all(ws: &mut Ws, queries: &[(u64, u64, Pick)], order: &[usize]) -> Vec<Vec<u64>> {
    let mut answers = vec![Vec::new(); queries.len()];
    for &q in order {
        let (lo, hi, pick) = &queries[q];
        let result = ws
            .ok(
                "gateway.replay",
                json!({"topic": "cxp.traffic", "sequence_from": lo, "sequence_to": hi,
                       "filters": pick.filters()}),
            )
            .await;
        answers[q] = sequences(&result);
    }
    answers
}

async fn check(steps: Vec<Step>, queries: Vec<(u64, u64, Pick)>, shift: usize) {
    let dir = tempfile::tempdir().expect("temp dir");
    let log: Arc<dyn EventLog> = orchestrata::log::open(&LogConfig::sled(dir.path()))
        .await
        .expect("open sled log");
    let n = steps.len();
    let half = shift % n;
    // Half the history before the gateway starts, half while it runs.
    for s in &steps[..half] {
        log.append(&record(s)).await.expect("append");
    }
    let a = gateway::start(test_config(), Services::new(log.clone()))
        .await
        .expect("gateway starts");
    for s in &steps[half..] {
        log.append(&record(s)).await.expect("append");
    }
    let expected: Vec<Vec<u64>> = queries
        .iter()
        .map(|(lo, hi, pick)| {
            (*lo..=*hi)
                .filter(|&i| passes(&steps, i as usize, pick))
                .collect()
        })
        .collect();
    let forward: Vec<usize> = (0..queries.len()).collect();
    let mut rotated: Vec<usize> = forward.clone();
    rotated.rotate_left(shift % queries.len());
    rotated.reverse();
    let mut ws = Ws::connect(&format!("ws://{}/", a.local_addr())).await;
    ws.auth(TOKEN).await;
    assert_eq!(replay_all(&mut ws, &queries, &forward).await, expected);
    assert_eq!(replay_all(&mut ws, &queries, &rotated).await, expected);
    ws.close().await;
    a.shutdown().await.expect("clean shutdown");
    // Another gateway on the same log, another order: the same answers.
    let b = gateway::start(test_config(), Services::new(log.clone()))
        .await
        .expect("gateway restarts");
    let mut ws = Ws::connect(&format!("ws://{}/", b.local_addr())).await;
    ws.auth(TOKEN).await;
    assert_eq!(replay_all(&mut ws, &queries, &rotated).await, expected);
    ws.close().await;
    b.shutdown().await.expect("clean shutdown");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    // ISSUE-15: filters are a function of the log
    // REQ-014-003 REQ-014-005 REQ-014-006 REQ-014-129 REQ-014-134: gap-fill replays
    // filtered by volk_id (to or from), subject and delivery status, like live.
    #[test]
    fn replay_is_a_function_of_the_log_whatever_was_replayed_before(
        steps in prop::collection::vec(step(), 1..60),
        raw in prop::collection::vec(
            (any::<prop::sample::Index>(), any::<prop::sample::Index>(), pick()), 1..8),
        shift in 0usize..1000,
    ) {
        let n = steps.len();
        let queries: Vec<(u64, u64, Pick)> = raw
            .into_iter()
            .map(|(a, b, p)| {
                let (a, b) = (a.index(n) as u64, b.index(n) as u64);
                (a.min(b), a.max(b), p)
            })
            .collect();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(check(steps, queries, shift));
    }
}
