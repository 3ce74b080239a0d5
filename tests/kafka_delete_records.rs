//! Records the broker deleted (DeleteRecords, as retention or an operator would) under a
//! reader's position on Apache Kafka (issue 59, item 6): reading from there answers the
//! typed `LogError::Truncated` naming the first record still held, never the later
//! records as if they were the ones asked for; a process that opens the stream
//! afterwards is refused, since the epoch marker at offset 0 went with them. (A topic
//! that the broker would trim is refused at open: `tests/kafka_topics.rs`.)

mod support;

use std::time::Duration;

use orchestrata::config::LogConfig;
use orchestrata::log::{self, LogError};
use orchestrata_schemas::events::kernel::KernelStarted;
use orchestrata_schemas::events::{EventRecord, Stream};
use rdkafka::admin::{AdminClient, AdminOptions};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::{Offset, TopicPartitionList};

/// Records whose payloads together exceed what a log process keeps in its follower's
/// cache (64 MiB a topic): the newest ~72 stay in memory, the older ones are read from
/// the broker.
const RECORDS: u64 = 120;
const PAYLOAD: usize = 900 * 1024;

fn big_record(n: u64) -> EventRecord {
    EventRecord::new(
        "test",
        format!("n-{n}"),
        KernelStarted {
            node: format!("n-{n}"),
            version: "v".repeat(PAYLOAD),
            backend: "kafka".into(),
        },
        chrono::Utc::now(),
    )
}

/// Deletes the records of `topic` below `offset` (the broker's DeleteRecords).
async fn delete_records_below(brokers: &str, topic: &str, offset: i64) {
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .create()
        .expect("admin client");
    let mut below = TopicPartitionList::new();
    below
        .add_partition_offset(topic, 0, Offset::Offset(offset))
        .expect("partition offset");
    let options = AdminOptions::new().request_timeout(Some(Duration::from_secs(10)));
    let deleted = admin
        .delete_records(&below, &options)
        .await
        .expect("DeleteRecords");
    for element in deleted.elements() {
        assert!(
            element.error().is_ok(),
            "DeleteRecords on {topic}: {:?}",
            element.error()
        );
    }
}

// issue 59 (item 6): DeleteRecords under a reader's position answers Truncated, not a skip
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_below_deleted_records_answers_truncated_not_the_records_after() {
    let brokers = support::kafka_brokers();
    let mut config = LogConfig::kafka(brokers.address.clone());
    config.topic_prefix = support::unique_prefix();
    let log = log::open(&config).await.expect("open");
    let stream = Stream::KernelEvents;
    for n in 0..RECORDS {
        assert_eq!(log.append(&big_record(n)).await.expect("append"), n);
    }
    // A reader has read sequences 0..10 and will go on from 10.
    let read = log.read(stream, 0, Some(9), 10).await.expect("read 0..=9");
    assert_eq!(read.len(), 10);

    // The broker deletes everything below sequence 40 (offset 41: offset = sequence + 1).
    let topic = format!("{}.{}", config.topic_prefix, stream.as_str());
    delete_records_below(&brokers.address, &topic, 41).await;

    match log.read(stream, 10, Some(19), 10).await {
        Err(LogError::Truncated {
            stream: s,
            requested,
            first,
        }) => {
            assert_eq!(s, stream);
            assert_eq!(requested, 10);
            assert_eq!(first, 40, "the first sequence the broker still holds");
        }
        Ok(events) => panic!(
            "a read from 10 must not pass other records off as 10..: got sequences {:?}",
            events.iter().map(|e| e.sequence).collect::<Vec<_>>()
        ),
        Err(other) => panic!("expected Truncated, got {other:?}"),
    }
    // What the broker still holds reads as before.
    let kept = log
        .read(stream, 40, Some(41), 2)
        .await
        .expect("read 40..=41");
    assert_eq!(
        kept.iter().map(|e| e.sequence).collect::<Vec<_>>(),
        vec![40, 41]
    );

    // Another process opening the stream now finds no epoch marker: refused, loudly.
    let later = log::open(&config)
        .await
        .expect("open (streams open on first use)");
    let err = later
        .read(stream, 40, None, 1)
        .await
        .expect_err("a stream whose marker the broker deleted is refused");
    assert!(
        matches!(&err, LogError::Corrupt { .. }) && err.to_string().contains("DeleteRecords"),
        "{err:?}"
    );
}
