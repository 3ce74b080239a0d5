//! `projection::open_view`: a stored view opened for reads outside a runner
//! (`projections show --id`) keeps a few entries in memory, reads the others from the
//! store, catches up with the log reading back what it needs — and answers what a fold
//! of the whole log in memory answers.

use orchestrata::log::EventLog;
use orchestrata::projection::{self, RebuildBounds, ViewHandle, ViewStore};
use orchestrata_projections::thread::ThreadStatus;
use std::collections::BTreeMap;
use std::sync::Arc;

use orchestrata_projections::{DecisionIndex, PageRequest, ThreadView, View};
use orchestrata_schemas::events::Stream;
use serde_json::Value;

mod projection_support;

use projection_support::{fill, sled_log};

/// A sled log in a temp dir holding `sends` of workload `seed` (the last sequence of
/// each stream returned), and an empty view store beside it. Keep `dir` bound: the
/// directory goes when it is dropped.
struct Filled {
    dir: tempfile::TempDir,
    log: Arc<dyn EventLog>,
    last: BTreeMap<Stream, u64>,
    store: ViewStore,
}

async fn filled(seed: u64, sends: usize) -> Filled {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = sled_log(&dir.path().join("log")).await;
    let last = fill(&log, seed, sends).await;
    let store = ViewStore::open(dir.path().join("views")).expect("store");
    Filled {
        dir,
        log,
        last,
        store,
    }
}

/// What `projections show --view thread --id` prints of a thread: the thread, its
/// packets and its effective status, as JSON.
fn shown(
    thread: &impl serde::Serialize,
    packets: &impl serde::Serialize,
    status: ThreadStatus,
) -> Value {
    serde_json::json!({ "thread": thread, "packets": packets, "effective_status": status })
}

/// A fold of the whole log in memory, and the thread view opened from `store` with 3
/// entries in memory.
async fn whole_and_opened(
    log: &Arc<dyn EventLog>,
    store: &ViewStore,
) -> (ThreadView, ViewHandle<ThreadView>) {
    let whole: ThreadView = projection::rebuild(log.as_ref(), None, &mut |_| {})
        .await
        .expect("whole fold");
    let opened = projection::open_view::<ThreadView>(log.as_ref(), store, 3)
        .await
        .expect("opened view");
    (whole, opened)
}

/// Stores `V` folded up to `until`, committing every 97 events and keeping 3 entries
/// in memory (most entries are let go of and stored).
async fn stored_to<V: View>(log: &Arc<dyn EventLog>, store: &ViewStore, until: u64) {
    let tight = RebuildBounds {
        keep_hot: 3,
        commit_events: 97,
    };
    projection::rebuild_into_store_with::<V>(log.as_ref(), store, Some(until), tight, &mut |_| {})
        .await
        .expect("stored view");
}

/// Asserts that every thread of `whole` — the thread, its packets, its effective status
/// — is what `opened` answers; returns how many `opened` read from its store.
fn same_threads(whole: &ThreadView, opened: &ViewHandle<ThreadView>) -> usize {
    let threads = whole
        .threads(&Default::default(), &PageRequest::first(100_000))
        .expect("a whole fold holds every thread")
        .items;
    assert!(threads.len() > 50, "{} threads", threads.len());
    let mut cold = 0;
    for expected in threads {
        let id = expected.thread_id.as_str();
        cold += usize::from(opened.read().thread(id).is_none());
        let (thread, packets) = opened
            .thread_state(id)
            .expect("read")
            .unwrap_or_else(|| panic!("thread {id} not found"));
        let want_packets: Vec<_> = whole.thread_packets(id).collect();
        let want_status = whole.thread_status(id).expect("status");
        assert_eq!(
            shown(&thread, &packets, opened.read().status_of(&thread)),
            shown(expected, &want_packets, want_status),
            "thread {id}"
        );
    }
    cold
}

// ISSUE-18: a thread shown from a view opened with 3 entries in
// memory, its store committed two thirds of the way and the rest folded on opening
// (reading back let-go threads and packets that later events change), equals the
// thread of a fold of the whole log in memory — for every thread.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_view_opened_from_its_store_answers_every_thread_as_a_whole_fold() {
    let Filled {
        dir: _dir,
        log,
        last,
        store,
    } = filled(21, 3_000).await;
    stored_to::<ThreadView>(&log, &store, last[&Stream::CxpTraffic] * 2 / 3).await;

    let (whole, opened) = whole_and_opened(&log, &store).await;
    assert_eq!(
        opened.read().checkpoint(),
        whole.checkpoint(),
        "caught up to the end"
    );
    let cold = same_threads(&whole, &opened);
    assert!(cold > 10, "only {cold} threads were read from the store");
    assert!(
        opened
            .thread_state("no-such-thread")
            .expect("read")
            .is_none(),
        "an unknown thread is none"
    );
}

// ISSUE-18: with nothing stored, the view opened is a fold of the log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_view_opened_with_nothing_stored_folds_the_log() {
    let Filled {
        dir: _dir,
        log,
        store,
        ..
    } = filled(22, 800).await;
    let (whole, opened) = whole_and_opened(&log, &store).await;
    assert_eq!(
        serde_json::to_value(&*opened.read()).expect("JSON"),
        serde_json::to_value(&whole).expect("JSON")
    );
}

// ISSUE-18: `projections show --view decision --id` opens the index with 3 bodies in
// memory, its store committed two thirds of the way: every decision — held in memory,
// found among the stored summaries and read from the log, or folded from the log on
// opening — equals the one a fold of the whole log holds, and an unknown id is none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_is_found_by_its_id_whether_hot_stored_or_folded_on_opening() {
    let Filled {
        dir: _dir,
        log,
        last,
        store,
    } = filled(23, 3_000).await;
    stored_to::<DecisionIndex>(&log, &store, last[&Stream::GovernanceDecisions] * 2 / 3).await;
    let whole: DecisionIndex = projection::rebuild(log.as_ref(), None, &mut |_| {})
        .await
        .expect("whole fold");
    let all = whole
        .decisions(
            &Default::default(),
            &PageRequest::first(100_000),
            &Default::default(),
        )
        .expect("a whole fold needs nothing stored")
        .items;
    assert!(all.len() > 50, "{} decisions", all.len());
    let index = projection::open_view::<DecisionIndex>(log.as_ref(), &store, 3)
        .await
        .expect("opened index");
    for expected in all {
        let want = expected.body.expect("a whole fold holds every body");
        let id = want.decision.decision_id;
        let found = projection::find_decision(&index, log.as_ref(), &id)
            .await
            .expect("search")
            .unwrap_or_else(|| panic!("decision {id} not found"));
        assert_eq!(
            serde_json::to_value(&found).expect("JSON"),
            serde_json::to_value(want).expect("JSON"),
            "decision {id}"
        );
    }
    let unknown = uuid::Uuid::now_v7();
    assert!(projection::find_decision(&index, log.as_ref(), &unknown)
        .await
        .expect("search")
        .is_none());
}

// ISSUE-18: `projections show --as-of SEQ --id` opens the view as it was at SEQ with a
// runner's memory. Before the stored checkpoint (old history) the view is folded into a
// scratch store; past it (recent history) the stored view is caught up to SEQ and the
// scratch store stays empty. Either way every thread equals a fold of the log up to
// SEQ in memory, threads opened after SEQ are none, and the view store is not written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_view_opened_as_of_a_sequence_answers_as_a_fold_up_to_it() {
    let Filled {
        dir: _dir,
        log,
        last,
        store,
    } = filled(24, 3_000).await;
    let end = last[&Stream::CxpTraffic];
    let stored_until = end * 2 / 3;
    stored_to::<ThreadView>(&log, &store, stored_until).await;
    let stored = store.checkpoint(ThreadView::NAME).expect("read");
    let (all, _) = whole_and_opened(&log, &store).await;
    for (as_of, recent) in [(stored_until / 2, false), ((stored_until + end) / 2, true)] {
        let scratch = tempfile::tempdir().expect("scratch dir");
        let opened = projection::open_view_as_of::<ThreadView>(
            log.as_ref(),
            &store,
            3,
            as_of,
            scratch.path(),
            &mut |_| {},
        )
        .await
        .expect("opened as of");
        let then: ThreadView = projection::rebuild(log.as_ref(), Some(as_of), &mut |_| {})
            .await
            .expect("fold up to as_of");
        assert_eq!(
            opened.read().checkpoint(),
            then.checkpoint(),
            "as of {as_of}"
        );
        let cold = same_threads(&then, &opened);
        assert!(
            cold > 10,
            "as of {as_of}: only {cold} threads read from a store"
        );
        let later = all
            .threads(&Default::default(), &PageRequest::first(100_000))
            .expect("whole")
            .items
            .into_iter()
            .filter(|t| then.thread(&t.thread_id).is_none())
            .map(|t| t.thread_id.clone())
            .collect::<Vec<_>>();
        assert!(
            !later.is_empty(),
            "as of {as_of}: no thread opened after it"
        );
        for id in later {
            assert!(
                opened.thread_state(&id).expect("read").is_none(),
                "as of {as_of}: thread {id} was opened after it"
            );
        }
        let scratch_used = std::fs::read_dir(scratch.path())
            .expect("scratch dir")
            .next()
            .is_some();
        assert_eq!(scratch_used, !recent, "as of {as_of}: scratch store used");
    }
    assert_eq!(
        store.checkpoint(ThreadView::NAME).expect("read"),
        stored,
        "the view store is only read"
    );
}
