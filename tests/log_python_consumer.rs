//! A consumer no one here wrote (Python: confluent-kafka + fastavro + schemas/avro/*.avsc)
//! reads and decodes what the Kafka backend produced.

mod support;

use std::process::Command;

use orchestrata::config::LogConfig;
use orchestrata::log::{self, KafkaLog};
use orchestrata_schemas::events::kernel::{KernelStarted, KernelStopped};
use orchestrata_schemas::events::{EventRecord, Stream};

// REQ-014-023 REQ-014-131
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_consumer_decodes_our_kafka_records() {
    let brokers = support::kafka_brokers();
    let mut config = LogConfig::kafka(brokers.address.clone());
    config.topic_prefix = support::unique_prefix();
    let log = log::open(&config).await.expect("open kafka log");
    let started = EventRecord::new(
        "kernel",
        "node-a",
        KernelStarted {
            node: "node-a".into(),
            version: "9.9.9".into(),
            backend: "kafka".into(),
        },
        chrono::Utc::now(),
    );
    let stopped = EventRecord::new(
        "kernel",
        "node-a",
        KernelStopped {
            node: "node-a".into(),
            reason: "test over".into(),
            clean: true,
        },
        chrono::Utc::now(),
    )
    .caused_by(uuid::Uuid::new_v4())
    .by(Some("operator".into()));
    assert_eq!(log.append(&started).await.expect("append"), 0);
    assert_eq!(log.append(&stopped).await.expect("append"), 1);
    log.flush().await.expect("flush");

    let topic = KafkaLog::connect(&brokers.address, &config)
        .expect("connect")
        .topic(Stream::KernelEvents);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/consume_kafka.py");
    let out = tokio::task::spawn_blocking(move || {
        Command::new(std::env::var("PYTHON").unwrap_or_else(|_| "python3".into()))
            .args([script, "--brokers", &brokers.address, "--topic", &topic])
            .output()
            .expect("run python3 (tests/run.sh installs confluent-kafka and fastavro)")
    })
    .await
    .expect("python task");
    assert!(
        out.status.success(),
        "python consumer failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("python prints JSON"))
        .collect();
    assert_eq!(lines.len(), 2, "both events, not the epoch marker");
    assert_eq!(lines[0]["sequence"], 0);
    assert_eq!(lines[0]["key"], "node-a");
    assert_eq!(lines[0]["schema"], "kernel.events.KernelStarted.avsc");
    assert_eq!(lines[0]["record"]["event_id"], started.event_id.to_string());
    assert_eq!(lines[0]["record"]["version"], "9.9.9");
    assert_eq!(lines[0]["record"]["source"], "kernel");
    assert_eq!(lines[1]["sequence"], 1);
    assert_eq!(lines[1]["schema"], "kernel.events.KernelStopped.avsc");
    assert_eq!(lines[1]["record"]["reason"], "test over");
    assert_eq!(lines[1]["record"]["clean"], true);
    assert_eq!(
        lines[1]["record"]["command_id"],
        stopped.command_id.expect("set").to_string()
    );
    // ISSUE-14: attribution — the envelope's principal, read by fastavro.
    assert_eq!(lines[1]["record"]["principal"], "operator");
    assert_eq!(lines[0]["record"]["principal"], serde_json::Value::Null);
}
