//! Helpers of the projection tests: logs filled with a synthetic workload, view JSON.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::Arc;

use orchestrata::config::{FsyncPolicy, LogConfig};
use orchestrata::log::{self, EventLog};
use orchestrata::projection;
use orchestrata_projections::sample::Workload;
use orchestrata_projections::View;
use orchestrata_schemas::events::{EventRecord, Stream};

/// A real sled log in `dir`, fsync every 100,000 records (tests fold, they do not crash).
pub async fn sled_log(dir: &std::path::Path) -> Arc<dyn EventLog> {
    let mut config = LogConfig::sled(dir);
    config.fsync = FsyncPolicy::EveryN(100_000);
    log::open(&config).await.expect("open sled log")
}

/// Appends `n` workload records (seed `seed`) to `log`, stream by stream in batches
/// (order within each stream is kept). Returns the last sequence per stream.
pub async fn fill(log: &Arc<dyn EventLog>, seed: u64, n: usize) -> BTreeMap<Stream, u64> {
    let mut workload = Workload::new(seed);
    let mut by_stream: BTreeMap<Stream, Vec<EventRecord>> = BTreeMap::new();
    for _ in 0..n {
        let r = workload.next_record();
        by_stream.entry(r.stream()).or_default().push(r);
    }
    append_all(log, by_stream).await
}

/// Appends records grouped by stream; returns the last sequence per stream.
pub async fn append_all(
    log: &Arc<dyn EventLog>,
    by_stream: BTreeMap<Stream, Vec<EventRecord>>,
) -> BTreeMap<Stream, u64> {
    let mut last = BTreeMap::new();
    for (stream, records) in by_stream {
        for chunk in records.chunks(2000) {
            let first = log.append_batch(chunk).await.expect("append batch");
            last.insert(stream, first + chunk.len() as u64 - 1);
        }
    }
    last
}

/// The view rebuilt from scratch from the whole log, as JSON.
pub async fn rebuilt_json<V: View>(log: &Arc<dyn EventLog>) -> String {
    let view: V = projection::rebuild(log.as_ref(), None, &mut |_| {})
        .await
        .expect("rebuild");
    serde_json::to_string(&view).expect("view serializes")
}

/// A view as JSON.
pub fn json<V: serde::Serialize>(view: &V) -> String {
    serde_json::to_string(view).expect("view serializes")
}

/// Asserts that the live decision index `live` answers what a fold of the whole log
/// holds: the same decisions, newest first, each body as the fold has it (a live index
/// holds only its newest bodies, none after a restart: the others are read from `log`).
pub async fn assert_decisions_equal_rebuild(
    live: &projection::ViewHandle<orchestrata_projections::DecisionIndex>,
    log: &Arc<dyn EventLog>,
) {
    let whole: orchestrata_projections::DecisionIndex =
        projection::rebuild(log.as_ref(), None, &mut |_| {})
            .await
            .expect("rebuild");
    let all = orchestrata_projections::decision::DecisionQuery::default();
    let (total, page) = live
        .newest(log.as_ref(), &all, 0, usize::MAX)
        .await
        .expect("live search");
    let (want_total, want) = whole
        .newest(&all, 0, usize::MAX, &Default::default())
        .expect("a whole fold holds every time");
    assert_eq!(total, want_total);
    let want: Vec<_> = want
        .iter()
        .map(|d| d.body.expect("a whole fold holds every body"))
        .collect();
    assert_eq!(json(&page), json(&want));
}

/// Folds what `log` holds past `view`'s checkpoint into it, commits what changed (an
/// incremental commit) and confirms the commit to the view, as a live runner does.
pub async fn catch_up_and_commit<V: View>(
    log: &dyn EventLog,
    store: &projection::ViewStore,
    view: &mut V,
) {
    projection::catch_up(log, view, None, &mut |_| {})
        .await
        .expect("catch up");
    let epochs = projection::stream_epochs::<V>(log).await.expect("epochs");
    let changes = view.take_changes(false).expect("changes");
    store
        .commit(V::NAME, &changes, view.checkpoint(), &epochs, false)
        .expect("commit");
    view.committed(usize::MAX);
}
