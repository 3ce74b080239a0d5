//! A process's follower whose consumer went past records it never delivered (as a
//! consumer whose offset was reset does; the split-roles kernel on the test broker was
//! left like this at start-up now and then) must read them again. Before, the cache
//! kept this process's own later records aside for good: every append of that stream
//! waited out the request timeout for "the records before it", and every read stopped
//! at the gap. Real broker, no mocks; the gap is made with the log's fault-injection
//! hook, `KafkaLog::forget_followed_from`.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use orchestrata::config::LogConfig;
use orchestrata::log::{EventLog, KafkaLog, TypedLog};
use orchestrata_projections::sample::Workload;
use orchestrata_schemas::events::{EventRecord, Stream};

/// `n` decision records.
fn decisions(workload: &mut Workload, n: usize) -> Vec<EventRecord> {
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let r = workload.next_record();
        if r.stream() == Stream::GovernanceDecisions {
            out.push(r);
        }
    }
    out
}

/// `log`'s events of `stream`, once there are `n` of them (or what it has after 10 s).
async fn read_until(log: &TypedLog, stream: Stream, n: usize) -> Vec<u64> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let read = log.read(stream, 0, None, 10_000).await.expect("read");
        if read.len() >= n || Instant::now() > deadline {
            return read.iter().map(|e| e.sequence).collect();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

// ISSUE-15: a gap the follower's consumer left is read again, so the next append does
// not wait out the request timeout and reads are whole again
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_gap_the_consumer_left_is_read_again() {
    let brokers = support::kafka_brokers();
    let mut config = LogConfig::kafka(brokers.address.clone());
    config.topic_prefix = support::unique_prefix();
    let raw = Arc::new(KafkaLog::connect(&brokers.address, &config).expect("connect kafka"));
    let ours = TypedLog::new(raw.clone());
    let theirs = TypedLog::new(Arc::new(
        KafkaLog::connect(&brokers.address, &config).expect("connect"),
    ));
    let busy = Stream::GovernanceDecisions;
    let mut workload = Workload::new(5);

    // Another process appends twenty records; this one reads them all.
    theirs
        .append_batch(&decisions(&mut workload, 20))
        .await
        .expect("their append");
    assert_eq!(
        read_until(&ours, busy, 20).await,
        (0..20).collect::<Vec<_>>()
    );

    // Its follower loses the last ten (offsets 11..=20: the epoch marker is offset 0)
    // while its consumer stays past them.
    raw.forget_followed_from(busy, 11).await.expect("forget");
    assert_eq!(ours.read(busy, 0, None, 100).await.expect("read").len(), 10);

    // Its own next append waits for the records before it: the follower reads them
    // again, well within the request timeout (5 s).
    let started = Instant::now();
    let own = decisions(&mut workload, 1);
    let sequence = ours.append_batch(&own).await.expect("our append");
    let waited = started.elapsed();
    assert_eq!(sequence, 20);
    assert!(
        waited < Duration::from_secs(3),
        "the append waited {waited:?}"
    );
    assert_eq!(
        read_until(&ours, busy, 21).await,
        (0..21).collect::<Vec<_>>()
    );
}
