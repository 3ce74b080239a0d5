use orchestrata_schemas::events::Envelope;

use super::super::{Held, PacketState, ThreadState, ThreadView};
use crate::sample::Workload;
use crate::testkit::Shelf;
use crate::{fold, View};

/// The key of the entry `held` names in `shelf`: through its index row if need be;
/// `None` when the row is not stored.
fn stored_key<T>(shelf: &Shelf, held: Held<'_, T>) -> Option<Result<T, Vec<u8>>>
where
    T: Clone,
{
    match held {
        Held::Memory(entry) => Some(Ok(entry.clone())),
        Held::Stored(key) => Some(Err(key)),
        Held::Indexed(rows) => {
            let (row, value) = rows
                .iter()
                .find_map(|row| Some((row, shelf.entries.get(row)?)))?;
            Some(Err(
                ThreadView::indexed_key(row, value).expect("a row names an entry")
            ))
        }
    }
}

/// A packet or thread found by the live view, read from `shelf` when let go of.
fn packet(shelf: &Shelf, view: &ThreadView, id: &uuid::Uuid) -> Option<PacketState> {
    match stored_key(shelf, view.find_packet(id)?)? {
        Ok(p) => Some(p),
        Err(key) => Some(ThreadView::decode_packet(&shelf.entries[&key]).expect("decodes")),
    }
}

fn thread(shelf: &Shelf, view: &ThreadView, id: &str) -> Option<ThreadState> {
    match stored_key(shelf, view.find_thread(id)?)? {
        Ok(t) => Some(t),
        Err(key) => Some(ThreadView::decode_thread(&shelf.entries[&key]).expect("decodes")),
    }
}

/// Folds `events` in chunks the way a runner does with `keep_hot`, committing after
/// every `per_commit` chunks; returns the live view and its store.
fn live(events: &[Envelope], keep_hot: usize, per_commit: usize) -> (ThreadView, Shelf, usize) {
    let mut view = ThreadView::default();
    let mut store = Shelf::default();
    let mut read = 0;
    for (i, chunk) in events.chunks(64).enumerate() {
        read += store.warm(&mut view, chunk);
        for e in chunk {
            view.apply_owned(e.clone());
        }
        if i % per_commit == per_commit - 1 {
            store.commit(&mut view, false, keep_hot);
            assert!(view.packets_in_memory() <= keep_hot);
            assert!(view.threads_in_memory() <= keep_hot);
        }
    }
    store.commit(&mut view, false, keep_hot);
    (view, store, read)
}

// REQ-004-US-008-005 REQ-004-INTG-002: a live view that lets threads and packets go
// answers every one of them, by id and as a thread's packets, exactly as the view
// folded whole does.
#[test]
fn a_view_that_lets_entries_go_answers_and_stores_exactly_what_the_whole_fold_does() {
    let events = Workload::new(18).envelopes(12_000);
    let whole: ThreadView = fold(&events);
    assert!(whole.packet_count() > 1_000, "the sample sends packets");
    let (view, store, read) = live(&events, 16, 3);
    assert!(
        read > 100,
        "events about old packets and threads read them back: {read}"
    );
    assert_eq!(view.packet_count(), whole.packet_count());
    assert_eq!(view.thread_count(), whole.thread_count());
    assert!(view.packets_in_memory() <= 16 && view.threads_in_memory() <= 16);
    // Searches need a whole view: one that let go keeps no order of all packets.
    assert!(view.whole().is_err());
    assert!(view.by_sequence.is_empty() && view.by_sender.is_empty());
    assert!(view.by_recipient.is_empty());
    // Every packet and thread, wherever it is, equals the whole fold's.
    for (_, id) in &whole.by_sequence {
        assert_eq!(
            packet(&store, &view, id).as_ref(),
            whole.packet(id),
            "packet {id}"
        );
    }
    for t in whole.threads.sorted() {
        let got = thread(&store, &view, &t.thread_id).expect("thread found");
        assert_eq!(&got, t, "thread {}", t.thread_id);
        for id in &got.packets {
            assert!(packet(&store, &view, id).is_some(), "its packet {id}");
        }
    }
    assert!(view.find_packet(&uuid::Uuid::nil()).is_none());
    assert!(view.find_thread("no such thread").is_none());
    // What the store holds is the whole view, byte for byte.
    let restored: ThreadView = store.restore();
    assert_eq!(restored, whole);
    assert_eq!(
        serde_json::to_string(&restored).expect("json"),
        serde_json::to_string(&whole).expect("json")
    );
}

// A view that let entries go cannot be written whole; a commit that failed is handed
// out again by the next one, so nothing is lost (REQ-004-INTG-002 stays answerable).
#[test]
fn changes_stay_taken_until_the_store_confirms_them_and_a_let_go_view_refuses_a_full_write() {
    let events = Workload::new(5).envelopes(3_000);
    let (mut view, mut store, _) = live(&events[..2_000], 8, 2);
    assert!(
        view.take_changes(true).is_err(),
        "entries only in the store cannot be written whole"
    );
    let more = &events[2_000..];
    store.warm(&mut view, more);
    for e in more {
        view.apply(e);
    }
    let failed = view.take_changes(false).expect("changes");
    assert!(!failed.entries.is_empty());
    // The commit "failed": nothing written, `committed` not called. Taken again:
    let again = view.take_changes(false).expect("changes");
    let keys = |c: &crate::Changes| c.entries.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
    assert_eq!(
        keys(&again),
        keys(&failed),
        "the same entries are handed out again"
    );
    store.commit(&mut view, false, 8);
    let whole: ThreadView = fold(&events);
    assert_eq!(store.restore::<ThreadView>(), whole);
    let nothing = view.take_changes(false).expect("changes");
    assert!(
        nothing.entries.is_empty(),
        "confirmed changes are forgotten"
    );
}

// A view that keeps everything (no `committed` call: a rebuild) never asks for entries,
// and offered entries are refused by views that never let go.
#[test]
fn whole_views_ask_for_nothing() {
    let events = Workload::new(7).envelopes(2_000);
    let view: ThreadView = fold(&events);
    let mut keys = Vec::new();
    for e in &events {
        view.cold_keys(e, &mut keys);
    }
    assert!(keys.is_empty());
    let mut sessions = crate::SessionView::default();
    assert!(sessions.warm(vec![(b"p1".to_vec(), vec![1])]).is_err());
    assert!(sessions.warm(Vec::new()).is_ok());
}

// REQ-004-US-008-014: a thread resolves when the work of every packet in it is
// archived — also when the other packets were let go of before the last archive.
#[test]
fn the_last_archive_reads_back_every_packet_of_its_thread() {
    use orchestrata_schemas::cxp::WorkStatus;
    use orchestrata_schemas::events::cxp_traffic::{PacketSent, WorkStatusChanged};

    use crate::testkit::{env, packet};
    const TH: &str = "thread-of-three";
    let archive = |seq: u64, id: u128| {
        env(
            seq,
            seq as i64,
            WorkStatusChanged {
                message_id: uuid::Uuid::from_u128(id),
                thread_id: TH.into(),
                old: WorkStatus::Pending,
                new: WorkStatus::Archived,
                changed_by: "U:Vz".into(),
                assigned_to: None,
                resolution: None,
                notes: None,
            },
        )
    };
    let mut events: Vec<Envelope> = (1..=3u128)
        .map(|id| {
            let seq = u64::try_from(id).unwrap_or(0);
            env(
                seq,
                seq as i64,
                PacketSent {
                    packet: packet(id, TH, "U:Ox", "U:Vz", 5),
                },
            )
        })
        .collect();
    events.extend([archive(4, 1), archive(5, 2), archive(6, 3)]);
    let whole: ThreadView = fold(&events);
    assert_eq!(
        whole.thread_status(TH),
        Some(super::super::ThreadStatus::Resolved)
    );
    // One event per chunk, a commit after each, one packet kept in memory.
    let (view, store, read) = {
        let mut view = ThreadView::default();
        let mut store = Shelf::default();
        let mut read = 0;
        for e in &events {
            read += store.warm(&mut view, std::slice::from_ref(e));
            view.apply(e);
            store.commit(&mut view, false, 1);
        }
        (view, store, read)
    };
    assert!(
        read >= 2,
        "the last archive read the other two packets back: {read}"
    );
    let thread = thread(&store, &view, TH).expect("thread");
    assert_eq!(thread.status, super::super::ThreadStatus::Resolved);
    assert_eq!(store.restore::<ThreadView>(), whole);
}

// A runner's start: the stored view read entry by entry, letting go as it reads, is the
// view restored whole and then committed; entries out of key order are refused.
#[test]
fn a_restore_that_lets_go_as_it_reads_equals_a_whole_restore_then_a_commit() {
    let events = Workload::new(3).envelopes(10_000);
    let (_, store, _) = live(&events, 16, 3);
    let mut whole: ThreadView = store.restore();
    whole.committed(16);
    let mut restorer = ThreadView::restorer(&store.head, 16).expect("head decodes");
    for (k, v) in &store.entries {
        restorer.entry(k.clone(), v.clone()).expect("entry decodes");
    }
    let streamed = restorer.finish().expect("finishes");
    assert!(whole.packet_count() > 2_000, "{}", whole.packet_count());
    assert_eq!(streamed, whole, "same entries in memory, same let go");
    assert!(streamed.packets_in_memory() <= 16 && streamed.threads_in_memory() <= 16);

    let mut backwards = ThreadView::restorer(&store.head, 16).expect("head decodes");
    let packets: Vec<_> = store.entries.iter().filter(|(k, _)| k[0] == b'p').collect();
    backwards
        .entry(packets[1].0.clone(), packets[1].1.clone())
        .expect("first");
    let late = backwards.entry(packets[0].0.clone(), packets[0].1.clone());
    assert!(
        late.is_err(),
        "a packet before the last one read is refused"
    );
    let mut unknown = ThreadView::restorer(&store.head, 16).expect("head decodes");
    assert!(unknown.entry(b"x1".to_vec(), vec![]).is_err());
    assert!(ThreadView::restorer(b"not a head", 16).is_err());
}

// A commit must not wait while entries pile up: past PRESSING_ENTRIES waiting packets
// the view asks for one, and a commit that let it keep `keep_hot` quiets it.
#[test]
fn many_waiting_packets_ask_for_a_commit() {
    use orchestrata_schemas::events::cxp_traffic::PacketSent;

    use crate::testkit::{env, packet};
    let mut view = ThreadView::default();
    let one = |seq: u64| {
        let packet = packet(u128::from(seq) + 1, "one", "U:Ox", "U:Vz", 5);
        env(seq, 0, PacketSent { packet })
    };
    Shelf::default().presses_past_the_bound(&mut view, one, 100);
    assert_eq!(view.packets_in_memory(), 100);
}

// A search over every packet or thread is refused by a view that let entries go,
// rather than answered from the recent ones only; a whole view answers it.
#[test]
fn searches_over_everything_need_a_whole_view() {
    use crate::thread::{LetGo, PacketQuery, ThreadQuery};
    use crate::PageRequest;
    let events = Workload::new(9).envelopes(4_000);
    let whole: ThreadView = fold(&events);
    let page = PageRequest::first(10_000);
    let all = whole
        .packets(&PacketQuery::default(), &page)
        .expect("whole");
    assert_eq!(all.items.len(), whole.packet_count());
    assert!(whole.threads(&ThreadQuery::default(), &page).is_ok());
    let (live, _, _) = live(&events, 16, 3);
    let refused = live.packets(&PacketQuery::default(), &page);
    let Err(LetGo { packets, threads }) = refused else {
        panic!("a live view searched part of the history");
    };
    assert_eq!(packets + live.packets_in_memory(), whole.packet_count());
    assert_eq!(threads + live.threads_in_memory(), whole.thread_count());
    assert!(live.threads(&ThreadQuery::default(), &page).is_err());
    assert!(LetGo { packets, threads }
        .to_string()
        .contains("store only"));
}
