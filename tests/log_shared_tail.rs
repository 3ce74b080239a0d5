//! Shared tails (`EventLog::tail_shared`): the tails of one process that follow the
//! head of a stream get the events another of them decoded, as the same allocation,
//! and every reader still gets exactly the log's events, in order, whatever it reads
//! (history or head). See `src/log/decoded.rs`.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use orchestrata::config::{FsyncPolicy, DEFAULT_SLED_CACHE_BYTES};
use orchestrata::log::{Bounds, EventLog, LogError, RawEntry, RawLog, SledLog, TailFeed, TypedLog};
use orchestrata_projections::sample::Workload;
use orchestrata_schemas::events::{Envelope, EventRecord, Stream};

async fn log(dir: &std::path::Path) -> TypedLog {
    let raw = SledLog::open(
        dir,
        FsyncPolicy::EveryAppend,
        Vec::new(),
        DEFAULT_SLED_CACHE_BYTES,
    )
    .await
    .expect("open sled");
    TypedLog::new(Arc::new(raw) as Arc<dyn RawLog>)
}

/// `n` records of the sample workload's `cxp.traffic`.
fn traffic(n: usize) -> Vec<EventRecord> {
    let mut workload = Workload::new(7);
    let mut out = Vec::new();
    while out.len() < n {
        let record = workload.next_record();
        if record.stream() == Stream::CxpTraffic {
            out.push(record);
        }
    }
    out
}

async fn shared(log: &TypedLog, from: u64, n: usize) -> Vec<Arc<Envelope>> {
    let tail = log
        .tail_shared(Stream::CxpTraffic, from)
        .await
        .expect("tail");
    tokio::time::timeout(
        Duration::from_secs(30),
        tail.take(n).map(|e| e.expect("tail entry")).collect(),
    )
    .await
    .expect("the tail delivered")
}

async fn plain(log: &TypedLog, from: u64, n: usize) -> Vec<Envelope> {
    let tail = log.tail(Stream::CxpTraffic, from).await.expect("tail");
    tokio::time::timeout(
        Duration::from_secs(30),
        tail.take(n).map(|e| e.expect("tail entry")).collect(),
    )
    .await
    .expect("the tail delivered")
}

// ISSUE-15: one decode per event for the tails at the head; the answer is still the log's
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tails_at_the_head_share_decoded_events_and_every_tail_reads_the_log() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = log(dir.path()).await;
    let records = traffic(300);
    log.append_batch(&records[..100]).await.expect("append");

    // A tail that starts while appends race with it reads every event once, in order.
    let first = {
        let reader = {
            let log = log.clone();
            tokio::spawn(async move { shared(&log, 0, 300).await })
        };
        for chunk in records[100..].chunks(20) {
            log.append_batch(chunk).await.expect("append");
        }
        reader.await.expect("reader")
    };
    let expected = plain(&log, 0, 300).await;
    let sequences: Vec<u64> = first.iter().map(|e| e.sequence).collect();
    assert_eq!(sequences, (0..300).collect::<Vec<_>>());
    for (got, want) in first.iter().zip(&expected) {
        assert_eq!(**got, *want, "a shared tail reads what a plain tail reads");
    }

    // A second tail over the same events gets the first one's decodes, not its own.
    let second = shared(&log, 0, 300).await;
    assert!(
        first.iter().zip(&second).all(|(a, b)| Arc::ptr_eq(a, b)),
        "every event was decoded once"
    );

    // A reader from the middle shares too; a plain tail never does.
    let middle = shared(&log, 150, 10).await;
    assert!(Arc::ptr_eq(&middle[0], &first[150]));
    assert_eq!(plain(&log, 150, 1).await[0], *first[150]);
}

// ISSUE-15: a reader of old history neither reuses nor evicts the head's decodes
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_of_history_gets_its_own_decodes_and_leaves_the_head_alone() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = log(dir.path()).await;
    // More than the ring keeps, so the start of the stream is history.
    let records = traffic(5_000);
    for chunk in records.chunks(500) {
        log.append_batch(chunk).await.expect("append");
    }
    let head = shared(&log, 0, 5_000).await;

    let old = shared(&log, 0, 10).await;
    let expected = plain(&log, 0, 10).await;
    for (i, (got, want)) in old.iter().zip(&expected).enumerate() {
        assert_eq!(**got, *want);
        assert!(
            !Arc::ptr_eq(got, &head[i]),
            "event {i} is older than the ring: decoded again"
        );
    }
    // The head is still shared after the history was read.
    let again = shared(&log, 4_990, 10).await;
    assert!(again
        .iter()
        .zip(&head[4_990..])
        .all(|(a, b)| Arc::ptr_eq(a, b)));
}

/// A backend that counts the entries read from it, over a real sled log.
struct Counting {
    inner: Arc<dyn RawLog>,
    read: Arc<std::sync::atomic::AtomicUsize>,
}

#[async_trait::async_trait]
impl RawLog for Counting {
    async fn append_raw(
        &self,
        stream: Stream,
        entries: Vec<(String, Vec<u8>)>,
    ) -> Result<u64, LogError> {
        self.inner.append_raw(stream, entries).await
    }

    async fn read_raw(
        &self,
        stream: Stream,
        from: u64,
        to: Option<u64>,
        limit: usize,
    ) -> Result<Vec<RawEntry>, LogError> {
        let entries = self.inner.read_raw(stream, from, to, limit).await?;
        self.read
            .fetch_add(entries.len(), std::sync::atomic::Ordering::SeqCst);
        Ok(entries)
    }

    async fn bounds(&self, stream: Stream) -> Result<Bounds, LogError> {
        self.inner.bounds(stream).await
    }

    async fn epoch(&self, stream: Stream) -> Result<String, LogError> {
        self.inner.epoch(stream).await
    }

    async fn tail_feed(&self, stream: Stream, from: u64) -> Result<TailFeed, LogError> {
        // The tail reads through this wrapper, so its reads are counted.
        let feed = self.inner.tail_feed(stream, from).await?;
        Ok(TailFeed {
            log: Arc::new(Counting {
                inner: self.inner.clone(),
                read: self.read.clone(),
            }),
            visible: feed.visible,
        })
    }

    async fn enforce_retention(&self, stream: Stream) -> Result<Option<u64>, LogError> {
        self.inner.enforce_retention(stream).await
    }

    async fn flush(&self) -> Result<(), LogError> {
        self.inner.flush().await
    }

    fn location(&self) -> String {
        self.inner.location()
    }
}

// ISSUE-15: a tail behind another reads nothing from the store for what the other decoded
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tail_finding_an_event_decoded_does_not_read_the_store_for_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sled = log(dir.path()).await.raw().clone();
    let read = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counting = Counting {
        inner: sled,
        read: read.clone(),
    };
    let log = TypedLog::new(Arc::new(counting) as Arc<dyn RawLog>);
    log.append_batch(&traffic(300)).await.expect("append");
    let count = || read.load(std::sync::atomic::Ordering::SeqCst);

    let first = shared(&log, 0, 300).await;
    assert_eq!(count(), 300, "the first tail reads every entry once");
    let second = shared(&log, 0, 300).await;
    assert_eq!(count(), 300, "the second tail took all 300 from the ring");
    assert!(first.iter().zip(&second).all(|(a, b)| Arc::ptr_eq(a, b)));

    // Past the ring's end the store is read again, and only for the new events.
    log.append_batch(&traffic(20)).await.expect("append");
    let tail = shared(&log, 250, 70).await;
    assert_eq!(count(), 320);
    let sequences: Vec<u64> = tail.iter().map(|e| e.sequence).collect();
    assert_eq!(sequences, (250..320).collect::<Vec<_>>());
    assert_eq!(*tail[69], plain(&log, 319, 1).await[0]);
}
