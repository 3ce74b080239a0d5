//! Broker loss on a three-node Apache Kafka cluster (issue 59, item 5): topics with
//! replication factor 3 and `min.insync.replicas` 2, the log's producers `acks=all` and
//! idempotent. SIGKILL the partition's leader while four clients append: every
//! acknowledged append is in the log at its sequence after the broker is back, and no
//! record is there twice. With two brokers gone, appends fail with an error (none is
//! acknowledged and then lost) and succeed again once a broker returns.

mod support;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use orchestrata::config::LogConfig;
use orchestrata::log::{self, EventLog, LogError};
use orchestrata_schemas::events::kernel::KernelStarted;
use orchestrata_schemas::events::{EventRecord, Stream};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::ClientConfig;

const STREAM: Stream = Stream::KernelEvents;

fn record(client: usize, n: u64) -> EventRecord {
    EventRecord::new(
        "test",
        format!("client-{client}"),
        KernelStarted {
            node: format!("client-{client}-{n}"),
            version: "0".into(),
            backend: "kafka".into(),
        },
        chrono::Utc::now(),
    )
}

/// The node id (= node number) leading `topic`'s partition 0.
fn leader(brokers: &str, topic: &str) -> usize {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .create()
        .expect("metadata client");
    let metadata = consumer
        .fetch_metadata(Some(topic), Duration::from_secs(10))
        .expect("metadata");
    let leader = metadata.topics()[0].partitions()[0].leader();
    usize::try_from(leader).expect("a leader")
}

/// What one client's appends came to: acknowledged `(sequence, event id)`, and errors.
#[derive(Default)]
struct Outcome {
    acked: Vec<(u64, String)>,
    failed: Vec<String>,
}

/// A client appending its own records until `stop`, one at a time.
fn spawn_client(
    log: Arc<dyn EventLog>,
    client: usize,
    stop: Arc<AtomicBool>,
) -> tokio::task::JoinHandle<Outcome> {
    tokio::spawn(async move {
        let mut outcome = Outcome::default();
        let mut n = 0;
        while !stop.load(Ordering::Relaxed) {
            let r = record(client, n);
            n += 1;
            match log.append(&r).await {
                Ok(seq) => outcome.acked.push((seq, r.event_id.to_string())),
                Err(e) => outcome.failed.push(e.to_string()),
            }
        }
        outcome
    })
}

fn config(brokers: &str, prefix: &str) -> LogConfig {
    let mut config = LogConfig::kafka(brokers);
    config.topic_prefix = prefix.to_string();
    config.topics.replication_factor = Some(3);
    config.topics.min_insync_replicas = Some(2);
    config.delivery_timeout = Duration::from_secs(8);
    config.request_timeout = Duration::from_secs(5);
    config
}

/// Every event of the stream, read by a fresh log: `(sequence, event id)`.
async fn everything(brokers: &str, prefix: &str) -> Vec<(u64, String)> {
    let log = log::open(&config(brokers, prefix)).await.expect("open");
    let mut all = Vec::new();
    loop {
        let from = all.last().map_or(0, |(s, _): &(u64, String)| s + 1);
        let page = log.read(STREAM, from, None, 1000).await.expect("read");
        if page.is_empty() {
            return all;
        }
        all.extend(
            page.iter()
                .map(|e| (e.sequence, e.record.event_id.to_string())),
        );
    }
}

// issue 59 (item 5): acknowledged appends survive the loss of a broker; no duplicates
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn acknowledged_appends_survive_a_killed_leader_and_two_lost_brokers_refuse() {
    let cluster = support::spawn_kafka_cluster();
    let brokers = cluster.address.clone();
    let prefix = support::unique_prefix();
    let topic = format!("{prefix}.{}", STREAM.as_str());

    let mut logs = Vec::new();
    for _ in 0..4 {
        logs.push(log::open(&config(&brokers, &prefix)).await.expect("open"));
    }
    logs[0]
        .append(&record(0, 9999))
        .await
        .expect("first append");
    let stop = Arc::new(AtomicBool::new(false));
    let tasks: Vec<_> = (0..4)
        .map(|c| spawn_client(logs[c].clone(), c, stop.clone()))
        .collect();
    tokio::time::sleep(Duration::from_secs(2)).await;

    // SIGKILL the leader mid-traffic, let the others go on, then bring it back.
    let killed = leader(&brokers, &topic);
    cluster.kill_node(killed);
    tokio::time::sleep(Duration::from_secs(10)).await;
    cluster.start_node(killed);
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.store(true, Ordering::Relaxed);
    let mut outcomes = Vec::new();
    for task in tasks {
        outcomes.push(task.await.expect("client task"));
    }
    let acked: Vec<(u64, String)> = outcomes.iter().flat_map(|o| o.acked.clone()).collect();
    assert!(
        outcomes.iter().all(|o| o.acked.len() >= 5),
        "every client appended through the loss: {:?}",
        outcomes
            .iter()
            .map(|o| (o.acked.len(), o.failed.len()))
            .collect::<Vec<_>>()
    );

    let stored = everything(&brokers, &prefix).await;
    let at: HashMap<&str, Vec<u64>> = stored.iter().fold(HashMap::new(), |mut m, (s, id)| {
        m.entry(id.as_str()).or_default().push(*s);
        m
    });
    for (id, seqs) in &at {
        assert_eq!(seqs.len(), 1, "event {id} stored twice, at {seqs:?}");
    }
    for (seq, id) in &acked {
        assert_eq!(
            at.get(id.as_str()).map(Vec::as_slice),
            Some(&[*seq][..]),
            "acknowledged event {id} at sequence {seq} is in the log there (killed node {killed})"
        );
    }
    let sequences: Vec<u64> = stored.iter().map(|(s, _)| *s).collect();
    assert_eq!(
        sequences,
        (0..stored.len() as u64).collect::<Vec<_>>(),
        "sequences without gaps"
    );

    // Two brokers gone: one replica in sync is below min.insync.replicas, so no append is
    // acknowledged; one broker back and appends succeed again.
    let first = leader(&brokers, &topic);
    let second = (1..=3).find(|n| *n != first).expect("another node");
    cluster.kill_node(first);
    cluster.kill_node(second);
    let log = &logs[1];
    let refused = log.append(&record(1, 100_000)).await;
    match &refused {
        Err(LogError::AppendTimeout { .. } | LogError::Kafka { .. }) => {}
        other => panic!("an append with two of three brokers gone must fail, got {other:?}"),
    }
    cluster.start_node(second);
    let deadline = Instant::now() + Duration::from_secs(90);
    let (seq, id) = loop {
        let r = record(1, 100_001);
        match log.append(&r).await {
            Ok(seq) => break (seq, r.event_id.to_string()),
            Err(e) => assert!(
                Instant::now() < deadline,
                "appends did not succeed again after a broker returned: {e}"
            ),
        }
    };
    cluster.start_node(first);
    let stored = everything(&brokers, &prefix).await;
    assert!(
        stored.contains(&(seq, id.clone())),
        "the append acknowledged after the return is stored at {seq}"
    );
    for (seq, id) in &acked {
        assert!(stored.contains(&(*seq, id.clone())), "{id} still at {seq}");
    }
}
