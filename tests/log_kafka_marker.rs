//! Several processes opening one fresh Kafka log at once (split roles: the kernel, the
//! projector and every gateway open every stream as they start) write one epoch marker
//! per topic, so every process reads the same epoch and a stream's first event is its
//! sequence 0. Before, each process that found a topic empty wrote a marker of its own:
//! the extra markers took offsets 1, 2… and the stream's events started at sequence 1
//! or later, a gap before the first event for every reader (real broker, no mocks).

mod support;

use std::sync::Arc;

use orchestrata::config::LogConfig;
use orchestrata::log::{EventLog, KafkaLog, RawLog, TypedLog};
use orchestrata_projections::sample::Workload;
use orchestrata_schemas::events::Stream;

// ISSUE-15: one epoch marker per topic however many processes open it at once
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_openers_of_a_fresh_log_share_one_marker_and_sequences_start_at_zero() {
    let brokers = support::kafka_brokers();
    let mut config = LogConfig::kafka(brokers.address.clone());
    config.topic_prefix = support::unique_prefix();
    // Four "processes": four logs, each with its own producer, follower and admin
    // client, opening the same streams at the same moment.
    let logs: Vec<Arc<dyn RawLog>> = (0..4)
        .map(|_| {
            Arc::new(KafkaLog::connect(&brokers.address, &config).expect("connect kafka"))
                as Arc<dyn RawLog>
        })
        .collect();
    let streams = [Stream::GovernanceDecisions, Stream::CxpTraffic];
    let opens = logs.iter().flat_map(|log| {
        streams.iter().map(move |stream| {
            let log = log.clone();
            let stream = *stream;
            tokio::spawn(async move { log.epoch(stream).await.expect("open the stream") })
        })
    });
    let epochs: Vec<String> = futures::future::join_all(opens)
        .await
        .into_iter()
        .map(|r| r.expect("open task"))
        .collect();
    for (i, stream) in streams.iter().enumerate() {
        let of_stream: Vec<&String> = epochs.iter().skip(i).step_by(streams.len()).collect();
        assert!(
            of_stream.windows(2).all(|w| w[0] == w[1]),
            "{stream}: every process reads one epoch, got {of_stream:?}"
        );
    }

    // The first event of each stream is its sequence 0, whoever appends it, and every
    // process reads it there.
    let mut workload = Workload::new(3);
    let record = loop {
        let r = workload.next_record();
        if r.stream() == Stream::CxpTraffic {
            break r;
        }
    };
    let writer = TypedLog::new(logs[1].clone());
    let sequence = writer.append(&record).await.expect("append");
    assert_eq!(sequence, 0, "the stream's first event is sequence 0");
    for log in &logs {
        // Another process reads it once its follower has (within moments).
        let log = TypedLog::new(log.clone());
        let mut read = Vec::new();
        for _ in 0..200 {
            read = log
                .read(Stream::CxpTraffic, 0, None, 10)
                .await
                .expect("read");
            if !read.is_empty() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        assert_eq!(
            read.iter().map(|e| e.sequence).collect::<Vec<_>>(),
            vec![0],
            "one event, at sequence 0"
        );
        assert_eq!(read[0].record, record);
    }
}
