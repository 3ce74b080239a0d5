//! The sled log's storage layout: an append is stored in blocks of consecutive entries,
//! and a log written one key per event (before blocks) is read and extended as it is.
//! See `src/log/embedded/record.rs` and `docs/log.md`.

use std::path::Path;
use std::time::Duration;

use orchestrata::config::{FsyncPolicy, RetentionPolicy, DEFAULT_SLED_CACHE_BYTES};
use orchestrata::log::{LogError, RawLog, SledLog};
use orchestrata_schemas::events::Stream;

/// Opens the log, waiting while the database is still locked by the handle dropped
/// just before (sled and the log's writer thread let go of it in the background).
async fn open(dir: &Path, retention: Vec<(Stream, RetentionPolicy)>) -> SledLog {
    for _ in 0..100 {
        match SledLog::open(
            dir,
            FsyncPolicy::EveryAppend,
            retention.clone(),
            DEFAULT_SLED_CACHE_BYTES,
        )
        .await
        {
            Ok(log) => return log,
            Err(LogError::Locked { .. }) => tokio::time::sleep(Duration::from_millis(50)).await,
            Err(e) => panic!("open sled log: {e:?}"),
        }
    }
    panic!("the sled database stayed locked after the last handle was dropped");
}

/// Opens the database directly once the log has let go of it (its writer thread closes
/// it after the last handle is dropped).
fn raw_db(dir: &Path) -> sled::Db {
    for _ in 0..100 {
        if let Ok(db) = sled::open(dir) {
            return db;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("the sled database stayed locked after the log was dropped");
}

/// A value of the layout written one key per event: `[stored_at_ms][key_len][key][value]`.
fn single(stored_at_ms: i64, key: &str, value: &[u8]) -> Vec<u8> {
    let mut out = stored_at_ms.to_be_bytes().to_vec();
    out.extend_from_slice(&(key.len() as u32).to_be_bytes());
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(value);
    out
}

fn entry(i: u64) -> (String, Vec<u8>) {
    (format!("key-{i}"), format!("value-{i}").into_bytes())
}

// ISSUE-18
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_append_is_stored_under_one_key_per_block_of_entries() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = open(dir.path(), vec![]).await;
    let entries: Vec<_> = (0..200).map(entry).collect();
    assert_eq!(
        log.append_raw(Stream::CxpTraffic, entries)
            .await
            .expect("append"),
        0
    );
    drop(log);
    let db = raw_db(dir.path());
    let keys: Vec<u64> = db
        .open_tree(Stream::CxpTraffic.as_str())
        .expect("tree")
        .iter()
        .keys()
        .map(|k| u64::from_be_bytes(k.expect("key").as_ref().try_into().expect("8 bytes")))
        .collect();
    // 200 small entries: blocks of 64, under the sequence of their first entry.
    assert_eq!(keys, vec![0, 64, 128, 192]);
}

// REQ-014-135 ISSUE-18
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_written_one_key_per_event_is_read_and_extended_after_the_upgrade() {
    let dir = tempfile::tempdir().expect("temp dir");
    // The earlier version: ten events, one key each, stored long ago.
    {
        let db = sled::open(dir.path()).expect("sled");
        let tree = db.open_tree(Stream::CxpTraffic.as_str()).expect("tree");
        for i in 0..10u64 {
            let (key, value) = entry(i);
            tree.insert(i.to_be_bytes(), single(1_000 + i as i64, &key, &value))
                .expect("insert");
        }
        db.flush().expect("flush");
    }
    let retention = vec![(
        Stream::CxpTraffic,
        RetentionPolicy {
            max_events: None,
            max_age_ms: Some(3_600_000),
        },
    )];
    let log = open(dir.path(), retention.clone()).await;
    let bounds = log.bounds(Stream::CxpTraffic).await.expect("bounds");
    assert_eq!((bounds.first, bounds.last), (Some(0), Some(9)));
    let more: Vec<_> = (10..100).map(entry).collect();
    assert_eq!(
        log.append_raw(Stream::CxpTraffic, more)
            .await
            .expect("append"),
        10
    );
    // One read across both layouts.
    let read = log
        .read_raw(Stream::CxpTraffic, 5, Some(20), 100)
        .await
        .expect("read across layouts");
    let got: Vec<_> = read
        .into_iter()
        .map(|e| (e.sequence, e.key, e.value))
        .collect();
    let expected: Vec<_> = (5..=20).map(|i| (i, entry(i).0, entry(i).1)).collect();
    assert_eq!(got, expected);
    drop(log);
    // Reopened: the next sequence follows the last block's last entry.
    let log = open(dir.path(), retention).await;
    assert_eq!(
        log.append_raw(Stream::CxpTraffic, vec![entry(100)])
            .await
            .expect("append"),
        100
    );
    // Age retention removes the old single entries and keeps every block written now.
    assert_eq!(
        log.enforce_retention(Stream::CxpTraffic)
            .await
            .expect("retention"),
        Some(10)
    );
    let kept = log
        .read_raw(Stream::CxpTraffic, 10, None, 1_000)
        .await
        .expect("read");
    assert_eq!(
        kept.iter().map(|e| e.sequence).collect::<Vec<_>>(),
        (10..=100).collect::<Vec<_>>()
    );
}
