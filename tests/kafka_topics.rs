//! Kafka topics fit for an event store (ISSUE-17 item 2): created to keep every record
//! with the cluster's replication unless configured; an existing topic that the broker
//! would trim is refused with the fix named, or accepted when the operator says so.
//! Against the Apache Kafka broker tests/run.sh starts (`ORCHESTRATA_TEST_KAFKA`), read back
//! with a separate admin client (DescribeConfigs).
//!
//! A read below a topic's log start after the broker deleted records
//! (`LogError::Truncated`): `tests/kafka_delete_records.rs`.

mod support;

use std::collections::HashMap;
use std::time::Duration;

use orchestrata::config::LogConfig;
use orchestrata::log::{self, LogError};
use orchestrata_schemas::events::kernel::KernelStarted;
use orchestrata_schemas::events::{EventRecord, Stream};
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, ResourceSpecifier, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;

fn record() -> EventRecord {
    EventRecord::new(
        "test",
        "n-1",
        KernelStarted {
            node: "n-1".into(),
            version: "0".into(),
            backend: "kafka".into(),
        },
        chrono::Utc::now(),
    )
}

fn admin(brokers: &str) -> AdminClient<DefaultClientContext> {
    ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .create()
        .expect("admin client")
}

fn options() -> AdminOptions {
    AdminOptions::new().request_timeout(Some(Duration::from_secs(5)))
}

/// The explicitly set settings of `topic`, as the broker reports them.
async fn settings(brokers: &str, topic: &str) -> HashMap<String, String> {
    let described = admin(brokers)
        .describe_configs(&[ResourceSpecifier::Topic(topic)], &options())
        .await
        .expect("describe configs");
    let resource = described
        .into_iter()
        .next()
        .expect("one resource")
        .expect("the topic's configs");
    resource
        .entries
        .into_iter()
        .filter_map(|e| Some((e.name, e.value?)))
        .collect()
}

/// Creates `topic` as someone else would: the broker's defaults plus `config`.
async fn precreate(brokers: &str, topic: &str, config: &[(&str, &str)]) {
    let mut new_topic = NewTopic::new(topic, 1, TopicReplication::Fixed(1));
    for (key, value) in config {
        new_topic = new_topic.set(key, value);
    }
    let created = admin(brokers)
        .create_topics([&new_topic], &options())
        .await
        .expect("create topics");
    for result in created {
        result.expect("topic created");
    }
}

fn kafka_config(brokers: &str) -> LogConfig {
    let mut config = LogConfig::kafka(brokers);
    config.topic_prefix = support::unique_prefix();
    config
}

// ISSUE-17: created topics keep every record; min.insync.replicas as configured.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn created_topics_keep_every_record() {
    let brokers = support::kafka_brokers();
    let mut config = kafka_config(&brokers.address);
    config.topics.min_insync_replicas = Some(1);
    let log = log::open(&config).await.expect("open");
    log.append(&record()).await.expect("append");
    let topic = format!("{}.{}", config.topic_prefix, Stream::KernelEvents.as_str());
    let settings = settings(&brokers.address, &topic).await;
    assert_eq!(
        settings.get("retention.ms").map(String::as_str),
        Some("-1"),
        "{settings:?}"
    );
    assert_eq!(
        settings.get("retention.bytes").map(String::as_str),
        Some("-1")
    );
    assert_eq!(
        settings.get("cleanup.policy").map(String::as_str),
        Some("delete")
    );
    assert_eq!(
        settings.get("min.insync.replicas").map(String::as_str),
        Some("1")
    );
}

// ISSUE-17: an existing topic that deletes history is refused with the fix named, and
// nothing is written to it; the operator's override (or a finite retention of their
// own) lets the log open it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_existing_topic_that_deletes_history_is_refused_unless_accepted() {
    let brokers = support::kafka_brokers();
    let config = kafka_config(&brokers.address);
    let topic = format!("{}.{}", config.topic_prefix, Stream::KernelEvents.as_str());
    precreate(&brokers.address, &topic, &[("retention.ms", "604800000")]).await;

    let log = log::open(&config)
        .await
        .expect("open (topics open on first use)");
    let err = log
        .append(&record())
        .await
        .expect_err("a topic that deletes history is refused");
    match &err {
        LogError::DeletesHistory {
            topic: refused,
            settings,
            ..
        } => {
            assert_eq!(refused, &topic);
            assert_eq!(settings, "retention.ms=604800000");
        }
        other => panic!("expected DeletesHistory, got {other:?}"),
    }
    let message = err.to_string();
    for named in [
        "kafka-configs.sh",
        "retention.ms=-1,retention.bytes=-1",
        "log.kafka_topics.accept_deleting_history: true",
    ] {
        assert!(message.contains(named), "{named} in: {message}");
    }
    drop(log);

    // A topic with finite retention of the operator's choosing is theirs to keep.
    let mut chosen = config.clone();
    chosen.topics.retention_ms = Some(604_800_000);
    let log = log::open(&chosen).await.expect("open");
    let first = log
        .append(&record())
        .await
        .expect("append after a finite retention is chosen");
    assert_eq!(
        first, 0,
        "the refused open wrote nothing: this is the stream's first event"
    );
    drop(log);

    let mut accepting = config.clone();
    accepting.topics.accept_deleting_history = true;
    let log = log::open(&accepting).await.expect("open");
    let second = log.append(&record()).await.expect("append when accepted");
    assert_eq!(second, 1);
}

// ISSUE-17: compaction deletes history as well.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compacted_topic_is_refused() {
    let brokers = support::kafka_brokers();
    let config = kafka_config(&brokers.address);
    let topic = format!("{}.{}", config.topic_prefix, Stream::KernelEvents.as_str());
    // retention.ms=-1: the broker's default (7 days) would be named as well.
    precreate(
        &brokers.address,
        &topic,
        &[("cleanup.policy", "compact"), ("retention.ms", "-1")],
    )
    .await;
    let log = log::open(&config).await.expect("open");
    let err = log.append(&record()).await.expect_err("refused");
    assert!(
        matches!(&err, LogError::DeletesHistory { settings, .. } if settings == "cleanup.policy=compact"),
        "{err:?}"
    );
}

// issue 59 (item 6): a topic someone created with Apache Kafka's own defaults (records
// kept 7 days, `log.retention.hours=168`) is refused at open, the default named.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_topic_with_the_brokers_default_retention_is_refused() {
    let brokers = support::kafka_brokers();
    let config = kafka_config(&brokers.address);
    let topic = format!("{}.{}", config.topic_prefix, Stream::KernelEvents.as_str());
    precreate(&brokers.address, &topic, &[]).await;
    let log = log::open(&config).await.expect("open");
    let err = log.append(&record()).await.expect_err("refused");
    assert!(
        matches!(&err, LogError::DeletesHistory { settings, .. } if settings == "retention.ms=604800000"),
        "{err:?}"
    );
}
