//! The projection runner against real logs: sled in a temp dir and a Kafka-protocol broker.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use orchestrata::config::LogConfig;
use orchestrata::log::{self, EventLog};
use orchestrata::projection::{ProjectionError, Projections, RunnerConfig, ViewStore};
use orchestrata_projections::sample::ROSTER;
use orchestrata_projections::{DecisionIndex, SessionView, ThreadView, View, VolkView};
use orchestrata_schemas::cxp::{DeliveryStatus, WorkStatus};
use orchestrata_schemas::events::cxp_traffic::PacketSent;
use orchestrata_schemas::events::fields::Json;
use orchestrata_schemas::events::types::{Packet, PacketPayload};
use orchestrata_schemas::events::{EventRecord, Stream};
use uuid::Uuid;

mod projection_support;
mod support;

use projection_support::{assert_decisions_equal_rebuild, fill, json, rebuilt_json, sled_log};

const WAIT: Duration = Duration::from_secs(30);

async fn wait_all(views: &Projections, last: &BTreeMap<Stream, u64>) {
    for (stream, seq) in last {
        if ThreadView::STREAMS.contains(stream) {
            views
                .threads()
                .wait_for(*stream, *seq, WAIT)
                .await
                .expect("threads catch up");
        }
        if SessionView::STREAMS.contains(stream) {
            views
                .sessions()
                .wait_for(*stream, *seq, WAIT)
                .await
                .expect("sessions catch up");
        }
        if VolkView::STREAMS.contains(stream) {
            views
                .volks()
                .wait_for(*stream, *seq, WAIT)
                .await
                .expect("volks catch up");
        }
        if DecisionIndex::STREAMS.contains(stream) {
            views
                .decisions()
                .wait_for(*stream, *seq, WAIT)
                .await
                .expect("decisions catch up");
        }
    }
}

async fn assert_equal_to_rebuild(views: &Projections, log: &Arc<dyn EventLog>) {
    // Serialize each live view before awaiting, so no lock is held across an await.
    let threads = json(&*views.threads().read());
    assert_eq!(threads, rebuilt_json::<ThreadView>(log).await);
    let sessions = json(&*views.sessions().read());
    assert_eq!(sessions, rebuilt_json::<SessionView>(log).await);
    let volks = json(&*views.volks().read());
    assert_eq!(volks, rebuilt_json::<VolkView>(log).await);
    assert_decisions_equal_rebuild(views.decisions(), log).await;
}

fn packet_record(thread: &str) -> EventRecord {
    let packet = Packet {
        message_id: Uuid::new_v4(),
        from_agent: "U:Cx".into(),
        to_agent: "U:Ox".into(),
        thread_id: thread.into(),
        subject: "read your write".into(),
        payload: PacketPayload::Json(serde_json::json!({"q": 1}).into()),
        created_at: Utc::now(),
        priority: 7,
        delivery_status: DeliveryStatus::Queued,
        work_status: WorkStatus::Pending,
        protocol_version: "1.0.0".into(),
        in_reply_to: None,
        metadata: Json::default(),
    };
    EventRecord::new("test", thread, PacketSent { packet }, Utc::now())
}

// REQ-004-INTG-002 REQ-004-INTG-003 REQ-004-INTG-004 REQ-004-INTG-005 REQ-004-INTG-011
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_views_on_sled_equal_a_rebuild_and_serve_read_your_write() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = sled_log(dir.path()).await;
    let last = fill(&log, 7, 4000).await;
    let store = ViewStore::open(dir.path().join("views")).expect("store");
    let config = RunnerConfig {
        batch_events: 500,
        batch_interval: Duration::from_millis(20),
        ..RunnerConfig::default()
    };
    let views = Projections::start(log.clone(), store.clone(), config)
        .await
        .expect("start");
    wait_all(&views, &last).await;
    assert_equal_to_rebuild(&views, &log).await;
    assert!(
        views.volks().read().volk("U:Ox").is_some(),
        "roster registered"
    );
    assert_eq!(views.volks().read().volks(true).count(), ROSTER.len());

    // Read-your-write: append, wait for the returned sequence, read.
    let thread = Uuid::new_v4().to_string();
    let seq = log.append(&packet_record(&thread)).await.expect("append");
    views
        .threads()
        .wait_for(Stream::CxpTraffic, seq, WAIT)
        .await
        .expect("sees the write");
    assert_eq!(
        views
            .threads()
            .read()
            .thread(&thread)
            .map(|t| t.message_count),
        Some(1)
    );

    // Waiting past the end times out with a typed error naming the view and stream.
    let err = views
        .threads()
        .wait_for(Stream::CxpTraffic, seq + 1000, Duration::from_millis(100))
        .await
        .expect_err("nothing at seq + 1000");
    assert!(
        matches!(err, ProjectionError::WaitTimeout { sequence, .. } if sequence == seq + 1000),
        "{err}"
    );
    assert!(
        err.to_string().contains("thread") && err.to_string().contains("cxp.traffic"),
        "{err}"
    );
    // Waiting on a stream the view does not fold fails at once.
    let err = views
        .sessions()
        .wait_for(Stream::CxpTraffic, 0, WAIT)
        .await
        .expect_err("not folded");
    assert!(matches!(err, ProjectionError::NotFolded { .. }), "{err}");

    // Stop commits; a restart resumes from the store without re-applying anything.
    let before = json(&*views.threads().read());
    views.stop().await.expect("stop");
    let stored = store
        .checkpoint(orchestrata_projections::ViewName::Thread)
        .expect("read")
        .expect("stored");
    assert_eq!(stored.checkpoint.last(Stream::CxpTraffic), Some(seq));
    let views = Projections::start(log.clone(), store.clone(), config)
        .await
        .expect("restart");
    assert_eq!(json(&*views.threads().read()), before, "restored as stored");
    let more = fill(&log, 8, 1000).await;
    wait_all(&views, &more).await;
    assert_equal_to_rebuild(&views, &log).await;
    views.stop().await.expect("stop");
}

// REQ-004-INTG-011
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_view_from_another_log_epoch_is_discarded() {
    let dir = tempfile::tempdir().expect("temp dir");
    let views_dir = tempfile::tempdir().expect("views dir");
    let store = ViewStore::open(views_dir.path()).expect("store");
    {
        let log = sled_log(dir.path()).await;
        let last = fill(&log, 1, 500).await;
        let views = Projections::start(log.clone(), store.clone(), RunnerConfig::default())
            .await
            .expect("start");
        wait_all(&views, &last).await;
        views.stop().await.expect("stop");
    }
    // A new log (new epochs) with different content: the old views must not leak in.
    let other = tempfile::tempdir().expect("other log");
    let log = sled_log(other.path()).await;
    let last = fill(&log, 2, 300).await;
    let views = Projections::start(log.clone(), store.clone(), RunnerConfig::default())
        .await
        .expect("start");
    wait_all(&views, &last).await;
    assert_equal_to_rebuild(&views, &log).await;
    views.stop().await.expect("stop");
}

// REQ-004-INTG-003 REQ-004-INTG-011
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_views_on_kafka_equal_a_rebuild() {
    let brokers = support::kafka_brokers();
    let mut config = LogConfig::kafka(brokers.address.clone());
    config.topic_prefix = support::unique_prefix();
    let log = log::open(&config).await.expect("open kafka log");
    let last = fill(&log, 11, 600).await;
    let views_dir = tempfile::tempdir().expect("views dir");
    let store = ViewStore::open(views_dir.path()).expect("store");
    let views = Projections::start(log.clone(), store.clone(), RunnerConfig::default())
        .await
        .expect("start");
    wait_all(&views, &last).await;
    assert_equal_to_rebuild(&views, &log).await;
    let thread = Uuid::new_v4().to_string();
    let seq = log.append(&packet_record(&thread)).await.expect("append");
    views
        .threads()
        .wait_for(Stream::CxpTraffic, seq, WAIT)
        .await
        .expect("sees the write");
    assert!(views.threads().read().thread(&thread).is_some());
    views.stop().await.expect("stop");
    let views = Projections::start(log.clone(), store, RunnerConfig::default())
        .await
        .expect("restart");
    assert_eq!(
        views.threads().checkpoint().last(Stream::CxpTraffic),
        Some(seq)
    );
    views.stop().await.expect("stop");
}
