//! The view store's format and the pipelined rebuild, against a real sled log and a real
//! view store (redb) in temp dirs.

use orchestrata::config::{FsyncPolicy, LogConfig, RetentionPolicy};
use orchestrata::log::{self, EventLog, LogError};
use orchestrata::projection::{self, Progress, ProjectionError, RebuildBounds, ViewStore};
use orchestrata_projections::{
    DecisionIndex, GraphView, PacketIndex, SessionView, ThreadView, View, ViewName,
};
use orchestrata_schemas::events::Stream;

mod projection_support;

use projection_support::{catch_up_and_commit, fill, json, rebuilt_json, sled_log};

/// The store's table, opened directly with redb (the store must be closed).
struct Raw(redb::Database);

const RAW_TABLE: redb::TableDefinition<&[u8], &[u8]> = redb::TableDefinition::new("views");

impl Raw {
    fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>, redb::Error> {
        use redb::ReadableDatabase;
        let txn = self.0.begin_read()?;
        let table = txn.open_table(RAW_TABLE)?;
        Ok(table.get(key.as_ref())?.map(|v| v.value().to_vec()))
    }

    /// Every key starting with `prefix`, with its value, in key order.
    fn scan_prefix(&self, prefix: impl AsRef<[u8]>) -> Vec<(Vec<u8>, Vec<u8>)> {
        use redb::ReadableDatabase;
        let prefix = prefix.as_ref();
        let txn = self.0.begin_read().expect("read");
        let table = txn.open_table(RAW_TABLE).expect("table");
        table
            .range(prefix..)
            .expect("range")
            .map(|e| e.expect("read"))
            .map(|(k, v)| (k.value().to_vec(), v.value().to_vec()))
            .take_while(|(k, _)| k.starts_with(prefix))
            .collect()
    }

    fn iter(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        self.scan_prefix(b"")
    }

    fn write(&self, key: impl AsRef<[u8]>, value: Option<&[u8]>) -> Result<(), redb::Error> {
        let txn = self.0.begin_write()?;
        {
            let mut table = txn.open_table(RAW_TABLE)?;
            match value {
                Some(value) => drop(table.insert(key.as_ref(), value)?),
                None => drop(table.remove(key.as_ref())?),
            }
        }
        Ok(txn.commit()?)
    }

    fn insert(&self, key: impl AsRef<[u8]>, value: &[u8]) -> Result<(), redb::Error> {
        self.write(key, Some(value))
    }

    fn remove(&self, key: impl AsRef<[u8]>) -> Result<(), redb::Error> {
        self.write(key, None)
    }
}

fn raw(dir: &std::path::Path) -> Raw {
    let _ = std::fs::create_dir_all(dir);
    Raw(redb::Database::create(dir.join("views.redb")).expect("open the store's file"))
}

/// The raw bytes stored under `key`.
fn stored_bytes(tree: &Raw, key: &str) -> Vec<u8> {
    tree.get(key)
        .expect("read")
        .unwrap_or_else(|| panic!("{key} is stored"))
}

/// Every key with its value's length.
fn stored_sizes(tree: &Raw) -> Vec<(String, usize)> {
    tree.iter()
        .into_iter()
        .map(|(key, value)| (String::from_utf8_lossy(&key).into_owned(), value.len()))
        .collect()
}

/// The chunk keys of view `name`, in the manifest's order.
fn chunk_keys(tree: &Raw, name: &str) -> Vec<String> {
    let pages = stored_bytes(tree, &format!("{name}.manifest"));
    let pages = u32::from_be_bytes(pages.try_into().expect("a u32 page count"));
    let manifest: Vec<u8> = (0..pages)
        .flat_map(|i| stored_bytes(tree, &format!("{name}.m.{i:08}")))
        .collect();
    manifest
        .chunks(16)
        .map(|id| {
            let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
            format!("{name}.c.{hex}")
        })
        .collect()
}

/// The stored body of view `name`: its chunks, in order, joined.
fn stored_view(tree: &Raw, name: &str) -> Vec<u8> {
    chunk_keys(tree, name)
        .iter()
        .flat_map(|key| stored_bytes(tree, key))
        .collect()
}

/// Writes `bytes` under `key` in the store at `dir` (the store must be closed).
fn store_bytes(dir: &std::path::Path, key: &str, bytes: &[u8]) {
    let tree = raw(dir);
    tree.insert(key, bytes).expect("write");
}

/// Opens the store at `dir` again, waiting (at most 10 s) while another handle still
/// holds it, as a restarting runner would.
async fn reopen(dir: &std::path::Path) -> ViewStore {
    for _ in 0..200 {
        match ViewStore::open(dir) {
            Ok(store) => return store,
            Err(e) if e.to_string().contains("locked") => {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
            Err(e) => panic!("store: {e:?}"),
        }
    }
    ViewStore::open(dir).expect("store")
}

/// Rebuilds `V` into the store and checks that loading it gives back the view a fold
/// in memory gives, byte for byte; returns the view's JSON.
async fn stored_round_trip<V: View>(log: &dyn EventLog, store: &ViewStore) -> String {
    stored_round_trip_with::<V>(log, store, RebuildBounds::default()).await
}

async fn stored_round_trip_with<V: View>(
    log: &dyn EventLog,
    store: &ViewStore,
    bounds: RebuildBounds,
) -> String {
    let checkpoint =
        projection::rebuild_into_store_with::<V>(log, store, None, bounds, &mut |_| {})
            .await
            .expect("rebuild into the store");
    let rebuilt: V = projection::rebuild(log, None, &mut |_| {})
        .await
        .expect("fold in memory");
    assert_eq!(&checkpoint, rebuilt.checkpoint());
    let (loaded, epochs) = store.load::<V>().expect("load").expect("stored");
    assert_eq!(
        epochs,
        projection::stream_epochs::<V>(log).await.expect("epochs")
    );
    assert_eq!(
        json(&loaded),
        json(&rebuilt),
        "{} reads back exactly",
        V::NAME
    );
    json(&rebuilt)
}

// REQ-004-US-004-013 REQ-004-INTG-011
#[tokio::test]
async fn views_are_stored_compactly_and_read_back_byte_for_byte() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = sled_log(&dir.path().join("log")).await;
    fill(&log, 5, 6_000).await;
    let views = dir.path().join("views");
    let store = ViewStore::open(&views).expect("store");
    let thread_json = stored_round_trip::<ThreadView>(log.as_ref(), &store).await;
    stored_round_trip::<SessionView>(log.as_ref(), &store).await;
    stored_round_trip::<GraphView>(log.as_ref(), &store).await;
    drop(store);

    let tree = raw(&views);
    let body = stored_view(&tree, "session");
    assert_ne!(body.first(), Some(&b'{'), "stored as MessagePack, not JSON");
    let thread_bytes: usize = tree
        .scan_prefix("thread.")
        .iter()
        .map(|(k, v)| k.len() + v.len())
        .sum();
    assert!(
        thread_bytes * 2 < thread_json.len(),
        "MessagePack entries ({thread_bytes} bytes) are well under half the JSON ({} bytes)",
        thread_json.len()
    );
    // The checkpoint entry stays JSON: `projections status` reads it without the view.
    let checkpoint = stored_bytes(&tree, "thread.checkpoint");
    let checkpoint: serde_json::Value = serde_json::from_slice(&checkpoint).expect("JSON");
    assert!(checkpoint["view"]["cxp.traffic"].as_u64().is_some());
}

// ISSUE-18: a rebuild commits as it goes and keeps only `keep_hot` entries between
// commits, reading let-go ones back when a later event needs them (late
// acknowledgements, replies into old threads in `fill`'s history) — what it stores
// equals a fold of the whole log in memory, for every view that lets entries go, and
// replaces what the store held for the view (views of another history).
#[tokio::test]
async fn a_rebuild_committing_as_it_goes_stores_what_a_fold_in_memory_gives() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = sled_log(&dir.path().join("log")).await;
    fill(&log, 11, 2_000).await;
    let store = ViewStore::open(dir.path().join("views")).expect("store");
    // First, views of another history in the same store: a rebuild must replace them.
    let other = sled_log(&dir.path().join("other")).await;
    fill(&other, 12, 1_500).await;
    projection::rebuild_into_store::<ThreadView>(other.as_ref(), &store, None, &mut |_| {})
        .await
        .expect("other thread view");
    projection::rebuild_into_store::<PacketIndex>(other.as_ref(), &store, None, &mut |_| {})
        .await
        .expect("other packet index");
    let tight = RebuildBounds {
        keep_hot: 3,
        commit_events: 97,
    };
    stored_round_trip_with::<ThreadView>(log.as_ref(), &store, tight).await;
    decisions_round_trip(log.as_ref(), &store, tight).await;
    stored_round_trip_with::<PacketIndex>(log.as_ref(), &store, tight).await;
    stored_round_trip_with::<GraphView>(log.as_ref(), &store, tight).await;
}

/// The decision index rebuilt into the store keeps no bodies there (they are in the
/// log): loaded, it holds none, and its searches, with the bodies read from the log,
/// answer what a fold of the whole log in memory answers; against a log without them,
/// a typed error.
async fn decisions_round_trip(log: &dyn EventLog, store: &ViewStore, bounds: RebuildBounds) {
    projection::rebuild_into_store_with::<DecisionIndex>(log, store, None, bounds, &mut |_| {})
        .await
        .expect("rebuild into the store");
    let whole: DecisionIndex = projection::rebuild(log, None, &mut |_| {})
        .await
        .expect("fold in memory");
    let (loaded, _) = store
        .load::<DecisionIndex>()
        .expect("load")
        .expect("stored");
    assert_eq!((loaded.len(), loaded.in_memory()), (whole.len(), 0));
    let opened = projection::open_view::<DecisionIndex>(log, store, 0)
        .await
        .expect("opened");
    let all = orchestrata_projections::decision::DecisionQuery::default();
    let (total, page) = opened
        .newest(log, &all, 0, usize::MAX)
        .await
        .expect("search reading bodies from the log");
    let (want_total, want) = whole
        .newest(&all, 0, usize::MAX, &Default::default())
        .expect("all in memory");
    assert!(total > 50, "{total} decisions");
    assert_eq!(total, want_total);
    let want: Vec<_> = want
        .iter()
        .map(|d| d.body.expect("whole").clone())
        .collect();
    assert_eq!(json(&page), json(&want));
    // A log that lacks the decisions the index names (truncated, or replaced) is a
    // typed error naming the sequence, not a page with holes.
    let empty_dir = tempfile::tempdir().expect("temp dir");
    let empty = sled_log(empty_dir.path()).await;
    match opened.newest(empty.as_ref(), &all, 0, 10).await {
        Err(ProjectionError::Corrupt { view, reason, .. }) => {
            assert_eq!(view, ViewName::Decision);
            assert!(reason.contains("the log holds none there"), "{reason}");
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

// REQ-004-US-004-013
#[tokio::test]
async fn a_view_stored_as_json_by_an_earlier_version_is_still_read() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = sled_log(&dir.path().join("log")).await;
    fill(&log, 8, 3_000).await;
    let view: ThreadView = projection::rebuild(log.as_ref(), None, &mut |_| {})
        .await
        .expect("rebuild");
    let epochs = projection::stream_epochs::<ThreadView>(log.as_ref())
        .await
        .expect("epochs");
    let legacy =
        serde_json::to_vec(&serde_json::json!({ "epochs": epochs, "view": view })).expect("JSON");
    let views = dir.path().join("views");
    store_bytes(&views, "thread", &legacy);

    let store = reopen(&views).await;
    let (loaded, loaded_epochs) = store.load::<ThreadView>().expect("load").expect("stored");
    assert_eq!(loaded_epochs, epochs);
    assert_eq!(json(&loaded), json(&view));
}

// REQ-004-US-004-013
#[tokio::test]
async fn an_unreadable_stored_view_is_a_typed_error_naming_the_fix() {
    let dir = tempfile::tempdir().expect("temp dir");
    let views = dir.path().join("views");
    for (case, bytes) in [
        ("truncated MessagePack", &[0x92u8, 0x81][..]),
        ("broken JSON", &b"{\"epochs\": {"[..]),
        ("empty", &[][..]),
    ] {
        store_bytes(&views, "thread", bytes);
        let store = reopen(&views).await;
        let err = store
            .load::<ThreadView>()
            .expect_err("an unreadable view is refused");
        match &err {
            ProjectionError::Corrupt { view, reason, .. } => {
                assert_eq!(*view, ViewName::Thread, "{case}");
                assert!(!reason.is_empty(), "{case}: says why");
            }
            other => panic!("{case}: expected Corrupt, got {other:?}"),
        }
        assert!(
            err.to_string()
                .contains("orchestrata projections rebuild --view thread"),
            "{case}: {err}"
        );
        drop(store);
    }
}

// REQ-004-INTG-011 REQ-004-US-004-013
#[tokio::test]
async fn rebuild_reports_progress_to_the_total_and_equals_a_catch_up() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = sled_log(&dir.path().join("log")).await;
    // Several pages of cxp.traffic, so the fold thread gets more than one.
    let last = fill(&log, 3, 40_000).await;
    let traffic = last[&Stream::CxpTraffic];
    assert!(traffic > 20_000, "{traffic} events span several pages");

    let mut reports: Vec<Progress> = Vec::new();
    let rebuilt: ThreadView = projection::rebuild(log.as_ref(), None, &mut |p| reports.push(p))
        .await
        .expect("rebuild");
    assert!(reports.len() > 2, "one report per page and a final one");
    assert!(
        reports.windows(2).all(|w| w[0].done <= w[1].done),
        "progress never goes back"
    );
    let final_report = reports.last().expect("reports");
    assert_eq!(final_report.total, traffic + 1);
    assert_eq!(
        final_report.done, final_report.total,
        "ends with everything applied"
    );

    let mut caught_up = ThreadView::default();
    let read = projection::catch_up(log.as_ref(), &mut caught_up, None, &mut |_| {})
        .await
        .expect("catch up");
    assert_eq!(read, traffic + 1);
    assert_eq!(json(&rebuilt), json(&caught_up));

    // Up to a sequence: the same as catching up to it.
    let until = traffic / 3;
    let past: ThreadView = projection::rebuild(log.as_ref(), Some(until), &mut |_| {})
        .await
        .expect("rebuild until");
    let mut past_caught_up = ThreadView::default();
    projection::catch_up(log.as_ref(), &mut past_caught_up, Some(until), &mut |_| {})
        .await
        .expect("catch up until");
    assert_eq!(past.checkpoint().last(Stream::CxpTraffic), Some(until));
    assert_eq!(json(&past), json(&past_caught_up));
}

// REQ-004-INTG-011
#[tokio::test]
async fn rebuild_from_a_log_cut_by_retention_fails_with_the_log_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = LogConfig::sled(dir.path().join("log"));
    config.fsync = FsyncPolicy::EveryN(100_000);
    config.retention.insert(
        Stream::CxpTraffic,
        RetentionPolicy {
            max_events: Some(100),
            max_age_ms: None,
        },
    );
    let log = log::open(&config).await.expect("open sled log");
    fill(&log, 4, 2_000).await;
    let first = log
        .enforce_retention(Stream::CxpTraffic)
        .await
        .expect("retention")
        .expect("events kept");
    assert!(first > 0, "retention dropped the oldest events");

    let err = projection::rebuild::<ThreadView>(log.as_ref(), None, &mut |_| {})
        .await
        .expect_err("a rebuild needs the whole stream");
    match err {
        ProjectionError::Log {
            view: ViewName::Thread,
            source: LogError::Truncated {
                stream, requested, ..
            },
        } => {
            assert_eq!(stream, Stream::CxpTraffic);
            assert_eq!(requested, 0);
        }
        other => panic!("expected a truncated-log error, got {other:?}"),
    }
}

/// `err` says view `view` is corrupt.
fn assert_corrupt(err: &ProjectionError, view: ViewName) {
    assert!(
        matches!(err, ProjectionError::Corrupt { view: v, .. } if *v == view),
        "{err:?}"
    );
}

/// Every key of the raw store with its value.
fn snapshot(tree: &Raw) -> std::collections::BTreeMap<Vec<u8>, Vec<u8>> {
    tree.iter().into_iter().collect()
}

/// How many keys were added or changed from `before` to `after`.
fn written(
    before: &std::collections::BTreeMap<Vec<u8>, Vec<u8>>,
    after: &std::collections::BTreeMap<Vec<u8>, Vec<u8>>,
) -> usize {
    after
        .iter()
        .filter(|(k, v)| before.get(*k) != Some(v))
        .count()
}

// ISSUE-18: a commit writes what changed. A view that grows with the log (threads and
// packets) is stored entry by entry, every value within `PART_BYTES` (a commit that
// touches one entry rewrites a few small pages); a commit after a few
// more events writes a few entries and the head, whatever the history; a view stored
// whole by an earlier version is replaced; a missing part is a typed error naming the
// fix, and the rebuild it names restores the view.
#[tokio::test]
async fn keyed_views_are_stored_entry_by_entry_and_a_commit_writes_what_changed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = sled_log(&dir.path().join("log")).await;
    fill(&log, 5, 6_000).await;
    let views = dir.path().join("views");
    store_bytes(
        &views,
        "thread",
        b"a view stored whole by an earlier version",
    );

    let store = reopen(&views).await;
    stored_round_trip::<ThreadView>(log.as_ref(), &store).await;
    let mut view: ThreadView = store.load().expect("load").expect("stored").0;
    let usage = store.usage(ViewName::Thread).expect("usage");
    let expected = 2 * (view.thread_count() + view.packet_count()) as u64;
    assert_eq!(
        usage.entries, expected,
        "one entry and one index row per thread and packet"
    );
    drop(store);
    let tree = raw(&views);
    let before = snapshot(&tree);
    assert!(before.len() > 2_000, "{} keys", before.len());
    assert!(
        before.values().all(|v| v.len() <= projection::PART_BYTES),
        "every value fits a part"
    );
    assert!(
        !before.contains_key(b"thread".as_slice()),
        "the whole-view key of the earlier version is gone"
    );
    drop(tree);

    // Twenty more events: the commit writes a few entries, the head and the checkpoint.
    fill(&log, 7, 20).await;
    let store = reopen(&views).await;
    catch_up_and_commit(log.as_ref(), &store, &mut view).await;
    let (loaded, _) = store.load::<ThreadView>().expect("load").expect("stored");
    assert_eq!(json(&loaded), rebuilt_json::<ThreadView>(&log).await);
    drop(store);
    let tree = raw(&views);
    let after = snapshot(&tree);
    let changed = written(&before, &after);
    assert!(
        changed > 0 && changed <= 60,
        "{changed} of {} keys written for 20 events",
        after.len()
    );
    let entries = |keys: &std::collections::BTreeMap<Vec<u8>, Vec<u8>>| {
        keys.keys().filter(|k| k.starts_with(b"thread.e.")).count()
    };
    assert!(entries(&after) > entries(&before), "entries were added");
    assert!(
        before
            .keys()
            .filter(|k| k.starts_with(b"thread.e."))
            .all(|k| after.contains_key(k)),
        "no entry is lost"
    );

    // A missing part is refused with the fix; the fix works.
    let (part, _) = after
        .iter()
        .find(|(k, _)| k.starts_with(b"thread.e."))
        .expect("an entry");
    tree.remove(part.as_slice()).expect("remove a part");
    drop(tree);
    let store = reopen(&views).await;
    let err = store
        .load::<ThreadView>()
        .expect_err("a view with a missing part is refused");
    assert_corrupt(&err, ViewName::Thread);
    assert!(
        err.to_string()
            .contains("orchestrata projections rebuild --view thread"),
        "{err}"
    );
    let rebuilt = stored_round_trip::<ThreadView>(log.as_ref(), &store).await;
    let (loaded, _) = store.load::<ThreadView>().expect("load").expect("stored");
    assert_eq!(json(&loaded), rebuilt);
}

// ISSUE-18: a view stored whole (it stays small) is cut into content-defined chunks of
// at most `PART_BYTES`; a commit after a few events writes a few chunks; a smaller view
// stored later leaves no stale chunk; a missing chunk is a typed error.
#[tokio::test]
async fn views_stored_whole_are_chunked_and_a_commit_writes_the_chunks_that_changed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let big_log = sled_log(&dir.path().join("big")).await;
    fill(&big_log, 5, 40_000).await;
    let small_log = sled_log(&dir.path().join("small")).await;
    fill(&small_log, 6, 300).await;
    let views = dir.path().join("views");

    let store = reopen(&views).await;
    stored_round_trip::<SessionView>(big_log.as_ref(), &store).await;
    let mut view: SessionView = store.load().expect("load").expect("stored").0;
    drop(store);
    let tree = raw(&views);
    let big = stored_view(&tree, "session").len();
    assert!(big > 10 * projection::PART_BYTES, "{big} bytes: chunked");
    assert!(
        stored_sizes(&tree)
            .iter()
            .all(|(_, len)| *len <= projection::PART_BYTES),
        "every value fits a part"
    );
    let before: std::collections::HashSet<String> =
        chunk_keys(&tree, "session").into_iter().collect();
    drop(tree);

    fill(&big_log, 7, 20).await;
    let store = reopen(&views).await;
    catch_up_and_commit(big_log.as_ref(), &store, &mut view).await;
    drop(store);
    let tree = raw(&views);
    let after: std::collections::HashSet<String> =
        chunk_keys(&tree, "session").into_iter().collect();
    drop(tree);
    let written = after.difference(&before).count();
    assert!(
        written * 10 < after.len(),
        "{written} of {} chunks written for 20 events",
        after.len()
    );

    let store = reopen(&views).await;
    stored_round_trip::<SessionView>(small_log.as_ref(), &store).await;
    drop(store);
    let tree = raw(&views);
    let stored_chunks: std::collections::HashSet<String> = stored_sizes(&tree)
        .into_iter()
        .map(|(key, _)| key)
        .filter(|key| key.starts_with("session.c."))
        .collect();
    let referenced: std::collections::HashSet<String> =
        chunk_keys(&tree, "session").into_iter().collect();
    assert_eq!(stored_chunks, referenced, "no stale chunks");
    assert!(stored_view(&tree, "session").len() < big);
    let first = chunk_keys(&tree, "session").remove(0);
    tree.remove(first.as_str()).expect("remove a chunk");
    drop(tree);
    let store = reopen(&views).await;
    let err = store
        .load::<SessionView>()
        .expect_err("a view with a missing chunk is refused");
    assert_corrupt(&err, ViewName::Session);
}

// ISSUE-18: a full commit voids the stored view first and writes its checkpoint last, so
// a crash in between leaves entries without a view. A runner that finds no view then
// writes its first commit whole: the leftovers are removed, not folded into the view.
#[tokio::test]
async fn entries_left_by_an_interrupted_full_commit_are_replaced_not_mixed_in() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = sled_log(&dir.path().join("log")).await;
    fill(&log, 9, 3_000).await;
    let views = dir.path().join("views");
    let other = sled_log(&dir.path().join("other")).await;
    fill(&other, 10, 500).await;
    let store = reopen(&views).await;
    // What the crash leaves: another log's entries, no checkpoint, no marker.
    stored_round_trip::<ThreadView>(other.as_ref(), &store).await;
    drop(store);
    let tree = raw(&views);
    for key in [
        "thread.checkpoint",
        "thread.entries",
        "thread.manifest",
        "thread.count",
    ] {
        tree.remove(key).expect("remove");
    }
    drop(tree);

    let store = reopen(&views).await;
    assert!(
        store.load::<ThreadView>().expect("load").is_none(),
        "no view"
    );
    let running: projection::RunningView<ThreadView> =
        projection::spawn_view(log.clone(), store.clone(), Default::default())
            .await
            .expect("runner");
    let traffic = log
        .last_sequence(Stream::CxpTraffic)
        .await
        .expect("last")
        .expect("traffic");
    running
        .handle()
        .wait_for(
            Stream::CxpTraffic,
            traffic,
            std::time::Duration::from_secs(20),
        )
        .await
        .expect("caught up");
    running.stop().await.expect("stop commits");
    let (loaded, _) = store.load::<ThreadView>().expect("load").expect("stored");
    assert_eq!(json(&loaded), rebuilt_json::<ThreadView>(&log).await);
}
