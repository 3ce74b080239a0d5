//! One conformance suite for every log backend: each check is a generic async function
//! over `Arc<dyn RawLog>`, and the `conformance!` macro instantiates all of them for the
//! sled backend (temp dir) and the Kafka backend (real Kafka-protocol broker).

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use orchestrata::config::{FsyncPolicy, LogConfig, RetentionPolicy};
use orchestrata::log::{KafkaLog, LogError, RawLog, SledLog};
use orchestrata_schemas::events::Stream;

/// A backend under test that can be closed and opened again on the same storage.
struct Harness {
    log: Option<Arc<dyn RawLog>>,
    kind: Kind,
}

enum Kind {
    Sled(tempfile::TempDir),
    Kafka(support::Brokers, LogConfig),
}

const RETAINED: Stream = Stream::ProviderEvents;

fn retention() -> BTreeMap<Stream, RetentionPolicy> {
    BTreeMap::from([(
        RETAINED,
        RetentionPolicy {
            max_events: Some(5),
            max_age_ms: None,
        },
    )])
}

impl Harness {
    async fn sled() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut h = Harness {
            log: None,
            kind: Kind::Sled(dir),
        };
        h.reopen().await;
        h
    }

    async fn kafka() -> Self {
        let brokers = support::kafka_brokers();
        let mut config = LogConfig::kafka(brokers.address.clone());
        config.topic_prefix = support::unique_prefix();
        config.retention = retention();
        let mut h = Harness {
            log: None,
            kind: Kind::Kafka(brokers, config),
        };
        h.reopen().await;
        h
    }

    fn log(&self) -> Arc<dyn RawLog> {
        self.log.clone().expect("log is open")
    }

    /// Closes the log (drops every handle) and opens it again on the same storage.
    async fn reopen(&mut self) {
        self.log = None;
        let log: Arc<dyn RawLog> = match &self.kind {
            Kind::Sled(dir) => Arc::new(
                SledLog::open(
                    dir.path(),
                    FsyncPolicy::EveryAppend,
                    retention(),
                    orchestrata::config::DEFAULT_SLED_CACHE_BYTES,
                )
                .await
                .expect("open sled"),
            ),
            Kind::Kafka(brokers, config) => {
                Arc::new(KafkaLog::connect(&brokers.address, config).expect("connect kafka"))
            }
        };
        self.log = Some(log);
    }
}

fn entry(i: u64) -> (String, Vec<u8>) {
    (format!("key-{i}"), format!("value-{i}").into_bytes())
}

async fn append_n(log: &Arc<dyn RawLog>, stream: Stream, n: u64) {
    for i in 0..n {
        let seq = log
            .append_raw(stream, vec![entry(i)])
            .await
            .expect("append");
        assert_eq!(seq, i, "sequences start at 0 and increase by one");
    }
}

async fn sequences_start_at_zero_without_gaps(h: Harness) {
    let log = h.log();
    append_n(&log, Stream::CxpTraffic, 10).await;
    // Streams are independent: another stream starts at 0 too.
    let seq = log
        .append_raw(Stream::KernelEvents, vec![entry(0)])
        .await
        .expect("append");
    assert_eq!(seq, 0);
    let all = log
        .read_raw(Stream::CxpTraffic, 0, None, 100)
        .await
        .expect("read");
    let seqs: Vec<u64> = all.iter().map(|e| e.sequence).collect();
    assert_eq!(seqs, (0..10).collect::<Vec<_>>());
}

async fn ranges_limits_and_keys(h: Harness) {
    let log = h.log();
    append_n(&log, Stream::SessionEvents, 10).await;
    let mid = log
        .read_raw(Stream::SessionEvents, 3, Some(6), 100)
        .await
        .expect("read");
    assert_eq!(
        mid.iter().map(|e| e.sequence).collect::<Vec<_>>(),
        vec![3, 4, 5, 6]
    );
    for e in &mid {
        assert_eq!(
            e.key,
            format!("key-{}", e.sequence),
            "key stored beside the value"
        );
        assert_eq!(e.value, format!("value-{}", e.sequence).into_bytes());
    }
    let limited = log
        .read_raw(Stream::SessionEvents, 2, None, 3)
        .await
        .expect("read");
    assert_eq!(
        limited.iter().map(|e| e.sequence).collect::<Vec<_>>(),
        vec![2, 3, 4]
    );
    let err = log
        .read_raw(Stream::SessionEvents, 5, Some(4), 10)
        .await
        .expect_err("from after to");
    assert!(
        matches!(err, LogError::InvalidRange { from: 5, to: 4, .. }),
        "{err}"
    );
}

async fn empty_stream_and_past_the_end(h: Harness) {
    let log = h.log();
    let bounds = log.bounds(Stream::WorkflowEvents).await.expect("bounds");
    assert_eq!((bounds.first, bounds.last, bounds.count()), (None, None, 0));
    let none = log
        .read_raw(Stream::WorkflowEvents, 0, None, 10)
        .await
        .expect("read empty");
    assert!(none.is_empty());
    append_n(&log, Stream::WorkflowEvents, 3).await;
    let past = log
        .read_raw(Stream::WorkflowEvents, 3, None, 10)
        .await
        .expect("read past end");
    assert!(past.is_empty());
    let far = log
        .read_raw(Stream::WorkflowEvents, 1000, Some(2000), 10)
        .await
        .expect("read far past end");
    assert!(far.is_empty());
    let bounds = log.bounds(Stream::WorkflowEvents).await.expect("bounds");
    assert_eq!(
        (bounds.first, bounds.last, bounds.count()),
        (Some(0), Some(2), 3)
    );
}

async fn batch_append_is_contiguous(h: Harness) {
    let log = h.log();
    append_n(&log, Stream::GatewayPresence, 2).await;
    let first = log
        .append_raw(Stream::GatewayPresence, (2..7).map(entry).collect())
        .await
        .expect("batch");
    assert_eq!(first, 2);
    let all = log
        .read_raw(Stream::GatewayPresence, 0, None, 100)
        .await
        .expect("read");
    assert_eq!(all.len(), 7);
    for (i, e) in all.iter().enumerate() {
        assert_eq!(e.sequence, i as u64);
        assert_eq!(e.key, format!("key-{i}"));
    }
}

/// Several streams in one call: each part contiguous from its stream's next sequence,
/// answered in part order, concurrent with single-stream appends (which never land
/// inside a part); the backend says whether the parts are one unit.
async fn multi_stream_append_is_contiguous_per_stream(h: Harness) {
    let log = h.log();
    append_n(&log, Stream::GatewayPresence, 2).await;
    let parts = |from: u64| {
        vec![
            (
                Stream::GatewayPresence,
                (from..from + 3).map(entry).collect(),
            ),
            (
                Stream::ProviderEvents,
                (from..from + 2).map(entry).collect(),
            ),
        ]
    };
    let (together, alone) = tokio::join!(
        log.append_raw_streams(parts(10)),
        log.append_raw(Stream::GatewayPresence, vec![entry(99)])
    );
    let firsts = together.expect("multi-stream append");
    let alone = alone.expect("single append");
    assert_eq!(firsts.len(), 2);
    assert_eq!(firsts[1], 0, "provider.events starts at 0");
    let presence = log
        .read_raw(Stream::GatewayPresence, 0, None, 100)
        .await
        .expect("read presence");
    let keys: Vec<&str> = presence.iter().map(|e| e.key.as_str()).collect();
    let at = usize::try_from(firsts[0]).expect("fits");
    assert_eq!(keys[at..at + 3], ["key-10", "key-11", "key-12"], "{keys:?}");
    assert!(alone < firsts[0] || alone >= firsts[0] + 3, "{keys:?}");
    let provider = log
        .read_raw(Stream::ProviderEvents, 0, None, 100)
        .await
        .expect("read provider");
    let keys: Vec<&str> = provider.iter().map(|e| e.key.as_str()).collect();
    assert_eq!(keys, ["key-10", "key-11"]);
    assert_eq!(log.atomic_streams(), matches!(h.kind, Kind::Sled(_)));
}

async fn epoch_and_sequences_survive_reopen(mut h: Harness) {
    let log = h.log();
    append_n(&log, Stream::VolkLifecycle, 3).await;
    let epoch = log.epoch(Stream::VolkLifecycle).await.expect("epoch");
    assert!(!epoch.is_empty());
    log.flush().await.expect("flush");
    drop(log);
    h.reopen().await;
    let log = h.log();
    assert_eq!(
        log.epoch(Stream::VolkLifecycle).await.expect("epoch"),
        epoch
    );
    let seq = log
        .append_raw(Stream::VolkLifecycle, vec![entry(3)])
        .await
        .expect("append after reopen");
    assert_eq!(seq, 3, "appends continue from the stored end");
    let bounds = log.bounds(Stream::VolkLifecycle).await.expect("bounds");
    assert_eq!((bounds.first, bounds.last), (Some(0), Some(3)));
}

async fn tail_has_no_gap_or_duplicate_at_the_seam(h: Harness) {
    let log = h.log();
    let stream = Stream::GovernanceDecisions;
    append_n(&log, stream, 20).await;
    // Appends race with the start of the tail.
    let writer = {
        let log = log.clone();
        tokio::spawn(async move {
            for i in 20..120 {
                log.append_raw(stream, vec![entry(i)])
                    .await
                    .expect("append");
                if i % 10 == 0 {
                    tokio::task::yield_now().await;
                }
            }
        })
    };
    let tail = log.tail_raw(stream, 5).await.expect("tail");
    let seen: Vec<u64> = tokio::time::timeout(
        Duration::from_secs(30),
        tail.take(115)
            .map(|e| e.expect("tail entry").sequence)
            .collect(),
    )
    .await
    .expect("tail delivered 115 entries");
    writer.await.expect("writer");
    assert_eq!(seen, (5..120).collect::<Vec<_>>());
}

async fn concurrent_tails_see_the_same_sequence(h: Harness) {
    let log = h.log();
    let stream = Stream::Commands;
    let mut subscribers = Vec::new();
    for _ in 0..3 {
        let tail = log.tail_raw(stream, 0).await.expect("tail");
        subscribers.push(tokio::spawn(async move {
            tail.take(50)
                .map(|e| {
                    let e = e.expect("tail entry");
                    (e.sequence, e.key)
                })
                .collect::<Vec<_>>()
                .await
        }));
    }
    for i in 0..50 {
        log.append_raw(stream, vec![entry(i)])
            .await
            .expect("append");
    }
    for subscriber in subscribers {
        let seen = tokio::time::timeout(Duration::from_secs(30), subscriber)
            .await
            .expect("subscriber finished")
            .expect("subscriber task");
        let expected: Vec<(u64, String)> = (0..50).map(|i| (i, format!("key-{i}"))).collect();
        assert_eq!(seen, expected);
    }
}

async fn retention_moves_first_and_reads_below_are_truncated(h: Harness) {
    let log = h.log();
    append_n(&log, RETAINED, 12).await;
    let first = log.enforce_retention(RETAINED).await.expect("retention");
    assert_eq!(first, Some(7), "max_events 5 keeps 7..=11");
    let bounds = log.bounds(RETAINED).await.expect("bounds");
    assert_eq!(
        (bounds.first, bounds.last, bounds.count()),
        (Some(7), Some(11), 5)
    );
    let err = log
        .read_raw(RETAINED, 3, None, 10)
        .await
        .expect_err("below first");
    match err {
        LogError::Truncated {
            stream,
            requested,
            first,
        } => assert_eq!((stream, requested, first), (RETAINED, 3, 7)),
        other => panic!("expected Truncated, got {other}"),
    }
    assert!(err_text(log.tail_raw(RETAINED, 0).await.err()).contains("removed by retention"));
    let kept = log
        .read_raw(RETAINED, 7, None, 10)
        .await
        .expect("read kept");
    assert_eq!(
        kept.iter().map(|e| e.sequence).collect::<Vec<_>>(),
        vec![7, 8, 9, 10, 11]
    );
    // Sequences continue after retention.
    let seq = log
        .append_raw(RETAINED, vec![entry(12)])
        .await
        .expect("append");
    assert_eq!(seq, 12);
}

/// Reads that start and end inside one append's entries (the sled backend stores an
/// append in blocks of up to 64 entries under one key).
async fn reads_inside_one_append(mut h: Harness) {
    let log = h.log();
    let entries: Vec<_> = (0..150).map(entry).collect();
    assert_eq!(
        log.append_raw(Stream::CxpTraffic, entries)
            .await
            .expect("append"),
        0
    );
    for (from, to, limit) in [
        (70, Some(80), 100),
        (63, None, 3),
        (0, Some(0), 10),
        (149, None, 10),
    ] {
        let read = log
            .read_raw(Stream::CxpTraffic, from, to, limit)
            .await
            .expect("read");
        let last = to.unwrap_or(149).min(from + limit as u64 - 1);
        let expected: Vec<_> = (from..=last).map(|i| (i, entry(i).0, entry(i).1)).collect();
        let got: Vec<_> = read
            .into_iter()
            .map(|e| (e.sequence, e.key, e.value))
            .collect();
        assert_eq!(got, expected, "read {from}..={to:?} limit {limit}");
    }
    let bounds = log.bounds(Stream::CxpTraffic).await.expect("bounds");
    assert_eq!((bounds.first, bounds.last), (Some(0), Some(149)));
    drop(log);
    h.reopen().await;
    let seq = h
        .log()
        .append_raw(Stream::CxpTraffic, vec![entry(150)])
        .await
        .expect("append");
    assert_eq!(
        seq, 150,
        "the next sequence follows the last entry of the last append"
    );
}

/// Retention that falls inside one append keeps exactly the newest `max_events`.
async fn retention_inside_one_append(h: Harness) {
    let log = h.log();
    let entries: Vec<_> = (0..12).map(entry).collect();
    log.append_raw(RETAINED, entries).await.expect("append");
    assert_eq!(
        log.enforce_retention(RETAINED).await.expect("retention"),
        Some(7)
    );
    let kept = log
        .read_raw(RETAINED, 7, None, 100)
        .await
        .expect("read kept");
    assert_eq!(
        kept.iter()
            .map(|e| (e.sequence, e.key.clone()))
            .collect::<Vec<_>>(),
        (7..12).map(|i| (i, entry(i).0)).collect::<Vec<_>>()
    );
    assert!(matches!(
        log.read_raw(RETAINED, 6, None, 10).await,
        Err(LogError::Truncated { first: 7, .. })
    ));
}

fn err_text(e: Option<LogError>) -> String {
    e.map(|e| e.to_string())
        .unwrap_or_else(|| "no error".into())
}

macro_rules! conformance {
    ($backend:ident, $harness:expr) => {
        mod $backend {
            use super::*;

            // REQ-014-131
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sequences_start_at_zero_and_have_no_gaps() {
                sequences_start_at_zero_without_gaps($harness.await).await;
            }

            // REQ-014-134 REQ-014-130
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn range_reads_respect_bounds_limits_and_keep_keys() {
                ranges_limits_and_keys($harness.await).await;
            }

            // REQ-014-134
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn empty_stream_and_reads_past_the_end_are_empty() {
                empty_stream_and_past_the_end($harness.await).await;
            }

            // REQ-014-131
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn batch_append_is_contiguous() {
                super::batch_append_is_contiguous($harness.await).await;
            }

            // ISSUE-17 REQ-014-131
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn multi_stream_append_is_contiguous_per_stream() {
                super::multi_stream_append_is_contiguous_per_stream($harness.await).await;
            }

            // REQ-014-135
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn epoch_and_sequences_survive_reopen() {
                super::epoch_and_sequences_survive_reopen($harness.await).await;
            }

            // REQ-014-132 REQ-014-130
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn tail_has_no_gap_or_duplicate_at_the_seam() {
                super::tail_has_no_gap_or_duplicate_at_the_seam($harness.await).await;
            }

            // REQ-014-130
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn concurrent_tails_see_the_same_sequence() {
                super::concurrent_tails_see_the_same_sequence($harness.await).await;
            }

            // REQ-014-125 REQ-014-133
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn retention_moves_first_and_reads_below_are_truncated() {
                super::retention_moves_first_and_reads_below_are_truncated($harness.await).await;
            }

            // REQ-014-134
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn reads_start_and_end_inside_one_append() {
                super::reads_inside_one_append($harness.await).await;
            }

            // REQ-014-125
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn retention_cuts_inside_one_append() {
                super::retention_inside_one_append($harness.await).await;
            }
        }
    };
}

conformance!(sled, Harness::sled());
conformance!(kafka, Harness::kafka());
