//! The log pager (ISSUE-15 structure: one pager instead of a read loop per reader), on a
//! real sled log in a temp dir.

mod support;

use orchestrata::config::LogConfig;
use orchestrata::log::{EventLog, LogError, Pager};
use orchestrata_schemas::events::Stream;
use support::ws::packet_sent;

async fn log_with(n: usize) -> (tempfile::TempDir, std::sync::Arc<dyn EventLog>) {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = orchestrata::log::open(&LogConfig::sled(dir.path()))
        .await
        .expect("log opens");
    let records: Vec<_> = (0..n)
        .map(|i| packet_sent("U:Ox", "U:Vz", &format!("p{i}"), "t-1"))
        .collect();
    if !records.is_empty() {
        log.append_batch(&records).await.expect("append");
    }
    (dir, log)
}

async fn sequences(mut pager: Pager<'_>) -> (Vec<u64>, Vec<usize>) {
    let (mut seqs, mut sizes) = (Vec::new(), Vec::new());
    while let Some(page) = pager.next_page().await.expect("page") {
        sizes.push(page.len());
        seqs.extend(page.iter().map(|e| e.sequence));
    }
    (seqs, sizes)
}

// ISSUE-15: every event of the range, once, in order, in pages of the size asked for;
// the bound `to` is inclusive and a page never crosses it.
#[tokio::test]
async fn pages_cover_the_range_once_in_order() {
    let (_dir, log) = log_with(10).await;
    let (seqs, sizes) =
        sequences(Pager::new(&*log, Stream::CxpTraffic, 0, None).page_size(4)).await;
    assert_eq!(seqs, (0..10).collect::<Vec<_>>());
    assert_eq!(sizes, vec![4, 4, 2]);

    let (seqs, sizes) =
        sequences(Pager::new(&*log, Stream::CxpTraffic, 3, Some(7)).page_size(2)).await;
    assert_eq!(seqs, vec![3, 4, 5, 6, 7]);
    assert_eq!(sizes, vec![2, 2, 1]);

    // A page size that divides the range exactly ends on the empty read after it.
    let (seqs, _) = sequences(Pager::new(&*log, Stream::CxpTraffic, 0, None).page_size(5)).await;
    assert_eq!(seqs.len(), 10);
    let all = Pager::new(&*log, Stream::CxpTraffic, 0, None)
        .page_size(3)
        .collect()
        .await
        .expect("collect");
    assert_eq!(all.len(), 10);
    assert_eq!(all[9].sequence, 9);
}

// ISSUE-15: empty and inverted ranges and an empty stream give no page; past the end
// gives no page; a page size of 0 is taken as 1 rather than looping forever.
#[tokio::test]
async fn empty_ranges_give_no_pages() {
    let (_dir, log) = log_with(3).await;
    let mut inverted = Pager::new(&*log, Stream::CxpTraffic, 2, Some(1));
    assert!(inverted.next_page().await.expect("read").is_none());
    let mut past = Pager::new(&*log, Stream::CxpTraffic, 3, None);
    assert!(past.next_page().await.expect("read").is_none());
    let mut other = Pager::new(&*log, Stream::GovernanceDecisions, 0, None);
    assert!(other.next_page().await.expect("read").is_none());
    let (seqs, sizes) =
        sequences(Pager::new(&*log, Stream::CxpTraffic, 0, None).page_size(0)).await;
    assert_eq!((seqs, sizes), (vec![0, 1, 2], vec![1, 1, 1]));
}

// ISSUE-15: a read error surfaces as the log's typed error (here: below the first
// retained sequence of a stream whose head was cut) and the pager stays where it was.
#[tokio::test]
async fn a_read_below_the_retained_start_is_a_typed_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = LogConfig::sled(dir.path());
    config.retention.insert(
        Stream::CxpTraffic,
        orchestrata::config::RetentionPolicy {
            max_events: Some(2),
            ..Default::default()
        },
    );
    let log = orchestrata::log::open(&config).await.expect("log opens");
    let records: Vec<_> = (0..5)
        .map(|i| packet_sent("U:Ox", "U:Vz", &format!("p{i}"), "t-1"))
        .collect();
    log.append_batch(&records).await.expect("append");
    log.enforce_retention(Stream::CxpTraffic)
        .await
        .expect("retention");
    let mut pager = Pager::new(&*log, Stream::CxpTraffic, 0, None);
    let e = pager.next_page().await.expect_err("truncated");
    assert!(matches!(e, LogError::Truncated { .. }), "{e:?}");
    assert_eq!(pager.position(), 0);
}
