//! Replay and live filters as a function of the log (issue 15, item 4), through a real
//! gateway over loopback WebSocket on a sled log: a `volk_id` filter matches a packet's
//! transitions however far they are from its `packet_sent` — further than any former
//! cache window — whatever was replayed before, on a bare gateway (views of its own) and
//! on one served by the projection runner; and `workflow.get` answers from the workflow
//! view, folded once per event.

mod support;

use std::sync::Arc;

use chrono::Utc;
use orchestrata::config::LogConfig;
use orchestrata::gateway::{self, RunningGateway, Services};
use orchestrata::log::EventLog;
use orchestrata_schemas::cxp::WorkStatus;
use orchestrata_schemas::events::cxp_traffic::{
    PacketAcknowledged, PacketDelivered, WorkStatusChanged,
};
use orchestrata_schemas::events::types::TaskOutcome;
use orchestrata_schemas::events::workflow::{
    WorkflowPaused, WorkflowStarted, WorkflowStepCompleted, WorkflowStepStarted,
};
use orchestrata_schemas::events::{Event, EventRecord};
use serde_json::{json, Value};
use support::ws::{packet_sent, test_config, Ws, TOKEN};
use uuid::Uuid;

/// Filler packets between the first packet's send and its transitions: more than the
/// 10,000-event window the gateway's packet cache was warmed from before issue 15.
const FILLER: usize = 10_050;

/// A packet's id.
fn message_id(record: &EventRecord) -> Uuid {
    match &record.event {
        Event::PacketSent(e) => e.packet.message_id,
        other => panic!("not a packet_sent: {other:?}"),
    }
}

fn delivered(id: Uuid, to: &str) -> EventRecord {
    let e = PacketDelivered {
        message_id: id,
        thread_id: "t-old".into(),
        to_agent: to.into(),
    };
    EventRecord::new("kernel.postman", "t-old", e, Utc::now())
}

fn acknowledged(id: Uuid, by: &str) -> EventRecord {
    let e = PacketAcknowledged {
        message_id: id,
        thread_id: "t-old".into(),
        acknowledged_by: by.into(),
    };
    EventRecord::new("kernel.postman", "t-old", e, Utc::now())
}

fn resolved(id: Uuid, by: &str) -> EventRecord {
    let e = WorkStatusChanged {
        message_id: id,
        thread_id: "t-old".into(),
        old: WorkStatus::Pending,
        new: WorkStatus::Resolved,
        changed_by: by.into(),
        assigned_to: None,
        resolution: None,
        notes: None,
    };
    EventRecord::new("kernel.postman", "t-old", e, Utc::now())
}

/// The history: packet `old` from U:Pm to U:Cx at sequence 0, [`FILLER`] packets
/// between U:Vz and U:Qa, then `old` delivered and acknowledged. Returns `old`'s id and
/// the sequence of its delivery.
async fn old_packet_then_filler(log: &dyn EventLog) -> (Uuid, u64) {
    let old = packet_sent("U:Pm", "U:Cx", "first contact", "t-old");
    let id = message_id(&old);
    assert_eq!(log.append(&old).await.expect("append"), 0);
    let filler: Vec<EventRecord> = (0..FILLER)
        .map(|i| packet_sent("U:Vz", "U:Qa", &format!("filler {i}"), "t-filler"))
        .collect();
    for page in filler.chunks(2_000) {
        log.append_batch(page).await.expect("append filler");
    }
    let at = log
        .append_batch(&[delivered(id, "U:Cx"), acknowledged(id, "U:Cx")])
        .await
        .expect("append transitions");
    (id, at)
}

async fn sled_log(dir: &tempfile::TempDir) -> Arc<dyn EventLog> {
    orchestrata::log::open(&LogConfig::sled(dir.path().join("log")))
        .await
        .expect("open sled log")
}

async fn client(running: &RunningGateway) -> Ws {
    let mut ws = Ws::connect(&format!("ws://{}/", running.local_addr())).await;
    ws.auth(TOKEN).await;
    ws
}

/// `(sequence, event_type)` of every event of a replay answer.
fn events(result: &Value) -> Vec<(u64, String)> {
    result["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| {
            (
                e["sequence"].as_u64().expect("sequence"),
                e["event_type"].as_str().expect("type").to_owned(),
            )
        })
        .collect()
}

/// The replays a client makes, and what each must answer, on a log from
/// [`old_packet_then_filler`].
async fn assert_old_packet_filters(ws: &mut Ws, at: u64) {
    let transitions = vec![
        (at, "packet_delivered".to_owned()),
        (at + 1, "packet_acknowledged".to_owned()),
    ];
    let late = json!({"topic": "cxp.traffic", "sequence_from": at - 10, "sequence_to": at + 1,
                      "filters": {"volk_id": "U:Pm"}});
    // REQ-014-003 REQ-014-129 REQ-014-134: the sender's filter matches the packet's
    // transitions, 10,050 events after its send, in a gap-fill range.
    let first = ws.ok("gateway.replay", late.clone()).await;
    assert_eq!(events(&first), transitions, "{first}");
    assert_eq!(first["total_matched"], json!(2));
    // REQ-014-127: the last N events matching the filter, newest range first.
    let last = ws
        .ok(
            "gateway.replay",
            json!({"topic": "cxp.traffic", "count": 3, "filters": {"volk_id": "U:Pm"}}),
        )
        .await;
    assert_eq!(
        events(&last),
        [vec![(0, "packet_sent".to_owned())], transitions.clone()].concat(),
        "{last}"
    );
    // REQ-014-005 REQ-014-007: subject glob AND delivery status, on a transition.
    let by_subject = ws
        .ok(
            "gateway.replay",
            json!({"topic": "cxp.traffic", "sequence_from": at - 10, "sequence_to": at + 1,
                   "filters": {"subject": "first *", "delivery_status": "acknowledged"}}),
        )
        .await;
    assert_eq!(events(&by_subject), transitions[1..].to_vec());
    // REQ-014-025: volk_alias is volk_id.
    let by_alias = ws
        .ok(
            "gateway.replay",
            json!({"topic": "cxp.traffic", "sequence_from": at - 10, "sequence_to": at + 1,
                   "filters": {"volk_alias": "U:Pm"}}),
        )
        .await;
    assert_eq!(events(&by_alias), transitions);
    // ISSUE-15: filters are a function of the log — replaying the send's range first
    // (which taught the old cache) and then the same late range answers the same.
    let early = ws
        .ok(
            "gateway.replay",
            json!({"topic": "cxp.traffic", "sequence_from": 0, "sequence_to": 5,
                   "filters": {"volk_id": "U:Pm"}}),
        )
        .await;
    assert_eq!(events(&early), vec![(0, "packet_sent".to_owned())]);
    let again = ws.ok("gateway.replay", late).await;
    assert_eq!(again["events"], first["events"]);
    // A Volk the packet does not concern matches none of it.
    let other = ws
        .ok(
            "gateway.replay",
            json!({"topic": "cxp.traffic", "sequence_from": at, "sequence_to": at + 1,
                   "filters": {"volk_id": "U:Vz"}}),
        )
        .await;
    assert_eq!(events(&other), vec![]);
}

// ISSUE-15: filters are a function of the log
// REQ-014-003 REQ-014-129
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn volk_filtered_replay_of_an_old_range_returns_the_packets_later_transitions() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = sled_log(&dir).await;
    let (id, at) = old_packet_then_filler(log.as_ref()).await;
    // A bare gateway: its packet index is a view it folds itself, over the whole log.
    let running = gateway::start(test_config(), Services::new(log.clone()))
        .await
        .expect("gateway starts");
    let mut ws = client(&running).await;
    assert_old_packet_filters(&mut ws, at).await;

    // Live (REQ-014-003): a subscriber to the sender sees the packet's next transition,
    // and not a filler packet's transition appended just before it.
    let sub = ws
        .ok("cxp.subscribe", json!({"filters": {"volk_id": "U:Pm"}}))
        .await;
    assert!(sub["subscription_id"].is_string(), "{sub}");
    let filler = log
        .read(
            orchestrata_schemas::events::Stream::CxpTraffic,
            1,
            Some(1),
            1,
        )
        .await
        .expect("read filler");
    let filler_id = message_id(&filler[0].record);
    log.append(&resolved(filler_id, "U:Qa"))
        .await
        .expect("append");
    let live_at = log.append(&resolved(id, "U:Cx")).await.expect("append");
    let pushed = loop {
        let n = ws.notification().await;
        if n["method"] == "cxp.traffic" {
            break n;
        }
    };
    assert_eq!(pushed["params"]["sequence"], json!(live_at), "{pushed}");
    assert_eq!(pushed["params"]["event_type"], json!("work_status_changed"));
    ws.close().await;
    running.shutdown().await.expect("clean shutdown");
}

// ISSUE-15: filters are a function of the log
// REQ-014-003 REQ-014-129: the same answers from the projection runner's packet index.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_filters_read_the_runners_packet_index_when_the_gateway_has_views() {
    let core = support::stack::Core::start().await;
    let (_, at) = old_packet_then_filler(core.log.as_ref()).await;
    let services = Services::new(core.log.clone()).with_kernel(core.kernel.clone(), core.views());
    let running = gateway::start(test_config(), services)
        .await
        .expect("gateway starts");
    let mut ws = client(&running).await;
    assert_old_packet_filters(&mut ws, at).await;
    // The filters above answered from the index; the runner goes on folding the
    // filler behind them (bounded wait: a loaded machine folds slower).
    let mut folded = 0;
    for _ in 0..400 {
        folded = core.projections.packets().read().len();
        if folded > FILLER {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert!(folded > FILLER, "the runner folds the whole log: {folded}");
    ws.close().await;
    running.shutdown().await.expect("clean shutdown");
}

fn workflow_record(event: impl Into<Event>) -> EventRecord {
    EventRecord::new("agents.workflow", "w-1", event, Utc::now())
}

// REQ-014-080 ISSUE-15: workflow.get answers from a view folded once per event, and
// sees a run's events appended just before the call (read-your-write on the view).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workflow_get_answers_from_the_workflow_view() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = sled_log(&dir).await;
    let running = gateway::start(test_config(), Services::new(log.clone()))
        .await
        .expect("gateway starts");
    let mut ws = client(&running).await;
    // Failure path: a run that never started.
    let err = ws.err("workflow.get", json!({"workflow_id": "w-1"})).await;
    assert_eq!(err["code"], json!(-32602), "{err}");
    assert!(err.to_string().contains("unknown_workflow"), "{err}");
    log.append(&workflow_record(WorkflowStarted {
        workflow_id: "w-1".into(),
        name: "pipeline".into(),
        params: json!({}).into(),
        started_by: "U:GW".into(),
        session_id: None,
    }))
    .await
    .expect("append");
    log.append(&workflow_record(WorkflowStepStarted {
        workflow_id: "w-1".into(),
        step: "U:Cx".into(),
        assigned_to: Some("U:Cx".into()),
    }))
    .await
    .expect("append");
    let run = ws.ok("workflow.get", json!({"workflow_id": "w-1"})).await;
    assert_eq!(run["status"], json!("running"), "{run}");
    assert_eq!(run["steps"][0]["status"], json!("running"));
    log.append(&workflow_record(WorkflowStepCompleted {
        workflow_id: "w-1".into(),
        step: "U:Cx".into(),
        outcome: TaskOutcome::Succeeded,
        output: json!({"patch": "ok"}).into(),
    }))
    .await
    .expect("append");
    log.append(&workflow_record(WorkflowPaused {
        workflow_id: "w-1".into(),
        paused_by: "U:GW".into(),
        reason: None,
    }))
    .await
    .expect("append");
    let run = ws.ok("workflow.get", json!({"workflow_id": "w-1"})).await;
    assert_eq!(run["status"], json!("paused"), "{run}");
    assert_eq!(run["steps"][0]["output"], json!({"patch": "ok"}));
    assert_eq!(run["workflow_id"], json!("w-1"));
    ws.close().await;
    running.shutdown().await.expect("clean shutdown");
}
