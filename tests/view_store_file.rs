//! The view store's file over time, against a real sled log and a real view store
//! (redb) in temp dirs: a store left by an earlier version is replaced, and the space
//! superseded entries took is reused while the store stays open (issue 18, item 3).

use orchestrata::projection::{self, Epochs, ViewStore};
use orchestrata_projections::{Changes, Checkpoint, ThreadView, ViewName};

mod projection_support;

use projection_support::{fill, json, sled_log};

// ISSUE-18: upgrading from a version whose view store was sled: its files are removed
// (views are derived data), nothing of it is read as a view, and the views are folded
// again from the log into the new store, which then reads back byte for byte.
#[tokio::test]
async fn a_sled_view_store_of_an_earlier_version_is_replaced_and_refolded() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = sled_log(&dir.path().join("log")).await;
    fill(&log, 3, 500).await;
    let views = dir.path().join("views");
    {
        let old = sled::open(&views).expect("an earlier version's sled store");
        let tree = old.open_tree("views").expect("its tree");
        tree.insert("thread", b"{\"epochs\": {}}".as_slice())
            .expect("an earlier whole view");
        old.flush().expect("flush");
    }
    assert!(views.join("conf").exists() && views.join("db").exists());

    let store = ViewStore::open(&views).expect("store");
    for gone in ["conf", "db", "blobs"] {
        assert!(
            !views.join(gone).exists(),
            "{gone} of the sled store is removed"
        );
    }
    assert!(views.join("views.redb").exists());
    assert!(
        store.load::<ThreadView>().expect("load").is_none(),
        "nothing of the earlier store is read as a view"
    );
    projection::rebuild_into_store::<ThreadView>(log.as_ref(), &store, None, &mut |_| {})
        .await
        .expect("refold into the new store");
    drop(store);
    let rebuilt: ThreadView = projection::rebuild(log.as_ref(), None, &mut |_| {})
        .await
        .expect("fold in memory");

    // A later open keeps the new store and reads the view back exactly.
    let store = ViewStore::open(&views).expect("reopen");
    let (loaded, _) = store.load::<ThreadView>().expect("load").expect("stored");
    assert_eq!(json(&loaded), json(&rebuilt));
}

/// `n` entries of about 1 KiB, their content drawn from `round`.
fn entries(keys: std::ops::Range<u32>, round: u32) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
    keys.map(|k| {
        let value: Vec<u8> = (0..1_000u32)
            .map(|i| (i.wrapping_mul(31) ^ k ^ round.wrapping_mul(7)) as u8)
            .collect();
        (k.to_be_bytes().to_vec(), Some(value))
    })
    .collect()
}

// ISSUE-18: space from superseded entries is reclaimed without stopping the server.
// One open store takes 400 commits that each rewrite 200 of 2,000 entries of ~1 KiB
// (80 MB written over ~2 MB of live entries); the file stays within a small multiple of
// what the live entries take, and what `usage` reports stays the live size.
#[tokio::test]
async fn rewritten_entries_reuse_the_space_of_the_ones_they_replace_while_open() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = ViewStore::open(dir.path().join("views")).expect("store");
    let epochs = Epochs::new();
    let checkpoint = Checkpoint::default();
    let name = ViewName::Thread;
    let full = Changes::tracked(b"head".to_vec(), entries(0..2_000, 0));
    store
        .commit(name, &full, &checkpoint, &epochs, true)
        .expect("first commit");
    let live = store.usage(name).expect("usage");
    assert_eq!(live.entries, 2_000);
    let first_size = store.size_on_disk().expect("size");

    let mut largest = first_size;
    for round in 1..=400u32 {
        let start = (round * 200) % 2_000;
        let changes = Changes::tracked(b"head".to_vec(), entries(start..start + 200, round));
        store
            .commit(name, &changes, &checkpoint, &epochs, false)
            .expect("commit");
        largest = largest.max(store.size_on_disk().expect("size"));
    }
    let usage = store.usage(name).expect("usage");
    assert_eq!(usage.entries, 2_000, "rewrites add no entries");
    assert!(
        usage.bytes.abs_diff(live.bytes) < live.bytes / 100,
        "live bytes stay the live size: {} then {}",
        live.bytes,
        usage.bytes
    );
    let written = 400 * 200 * 1_000u64;
    assert!(
        largest < 6 * live.bytes,
        "the file stayed at {largest} bytes at most for {} live bytes ({first_size} after \
         the first commit) while {written} bytes were written over them",
        live.bytes
    );
}
