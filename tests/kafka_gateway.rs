//! A gateway whose kernel writes to a real Kafka-protocol broker (issue 15): the
//! configured `read_your_write_timeout` is what bounds a mutating method's wait for its
//! view, and a Kafka log serves its own writes back at once.

mod support;

use std::sync::Arc;
use std::time::Duration;

use orchestrata::config::LogConfig;
use orchestrata::gateway::{self, Services};
use orchestrata::kernel::{Kernel, KernelConfig, TokioClock};
use orchestrata_schemas::events::Stream;
use serde_json::json;
use support::stack::Core;
use support::ws::{test_config, Ws, TOKEN};

/// A kernel on a fresh Kafka log (unique topic prefix) with the standard roster.
async fn kafka_kernel() -> (
    support::Brokers,
    Arc<dyn orchestrata::log::EventLog>,
    Kernel,
) {
    let brokers = support::kafka_brokers();
    let mut config = LogConfig::kafka(brokers.address.clone());
    config.topic_prefix = support::unique_prefix();
    let log = orchestrata::log::open(&config)
        .await
        .expect("open kafka log");
    let (kernel, _) = Kernel::start(
        log.clone(),
        KernelConfig::default(),
        Arc::new(TokioClock::new()),
    )
    .await
    .expect("kernel starts on kafka");
    (brokers, log, kernel)
}

// ISSUE-15: `read_your_write_timeout` is read: a gateway configured with a bound answers
// `view_lagging` naming that bound when its views never apply the write (views folded
// from another, idle log), for two different configured values.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_configured_read_your_write_timeout_bounds_the_wait() {
    let (_brokers, log, kernel) = kafka_kernel().await;
    // Views that never see this kernel's events.
    let idle = Core::start().await;
    for bound_ms in [150_u64, 320] {
        let mut config = test_config();
        config.read_your_write_timeout = Duration::from_millis(bound_ms);
        let services = Services::new(log.clone()).with_kernel(kernel.clone(), idle.views());
        let running = gateway::start(config, services)
            .await
            .expect("gateway starts");
        let mut ws = Ws::connect(&format!("ws://{}/", running.local_addr())).await;
        ws.auth(TOKEN).await;
        let err = ws
            .err(
                "cxp.send",
                json!({"from": "U:Ox", "target": "U:Vz", "subject": "lagging", "payload": {}}),
            )
            .await;
        assert_eq!(err["code"], -32603, "{err}");
        assert_eq!(err["data"]["reason"], "view_lagging", "{err}");
        assert_eq!(err["data"]["waited_ms"], bound_ms, "{err}");
        // The write itself went through: the kernel appended the packet to Kafka.
        let sequence = err["data"]["sequence"].as_u64().expect("sequence");
        let stored = log
            .read(Stream::CxpTraffic, sequence, Some(sequence), 1)
            .await
            .expect("read the packet back");
        assert_eq!(stored.len(), 1, "the packet is on the log");
        ws.close().await;
        running.shutdown().await.expect("clean shutdown");
    }
}

// ISSUE-15: on Kafka a gateway answers `cxp.send` from its views (read-your-write through
// the log's own cache) and `cxp.status` right after shows the packet.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kafka_backed_gateway_answers_send_and_reads_its_own_write() {
    let (_brokers, log, kernel) = kafka_kernel().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let store = orchestrata::projection::ViewStore::open(dir.path()).expect("view store");
    let projections = orchestrata::projection::Projections::start(
        log.clone(),
        store,
        orchestrata::projection::RunnerConfig::default(),
    )
    .await
    .expect("projections on kafka");
    let services = Services::new(log.clone()).with_kernel(
        kernel.clone(),
        orchestrata::gateway::backends::Views::of(&projections),
    );
    let running = gateway::start(test_config(), services)
        .await
        .expect("gateway starts");
    let url = format!("ws://{}/", running.local_addr());
    let mut watcher = Ws::connect(&url).await;
    watcher.auth(TOKEN).await;
    watcher.ok("cxp.subscribe", json!({})).await;
    let mut ws = Ws::connect(&url).await;
    ws.auth(TOKEN).await;
    let mut ids = Vec::new();
    for n in 0..20 {
        let sent = ws
            .ok(
                "cxp.send",
                json!({"from": "U:Ox", "target": "U:Vz", "subject": format!("s{n}"), "payload": {"n": n}}),
            )
            .await;
        let status = ws
            .ok("cxp.status", json!({"thread_id": sent["thread_id"]}))
            .await;
        assert!(
            status
                .to_string()
                .contains(sent["message_id"].as_str().expect("id")),
            "{status}"
        );
        ids.push(sent["message_id"].as_str().expect("id").to_owned());
    }
    // The subscriber gets every packet, live.
    let mut unseen: std::collections::BTreeSet<_> = ids.into_iter().collect();
    while !unseen.is_empty() {
        let n = watcher.notification().await.to_string();
        unseen.retain(|id| !n.contains(id.as_str()));
    }
    ws.close().await;
    watcher.close().await;
    running.shutdown().await.expect("clean shutdown");
    projections.stop().await.expect("projections stop");
}
