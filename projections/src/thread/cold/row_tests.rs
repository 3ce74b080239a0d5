//! Index rows: how a let-go entry is found from its id (`cold_ids.rs`, `stored.rs`).

use orchestrata_schemas::events::cxp_traffic::PacketSent;
use orchestrata_schemas::events::Envelope;

use super::super::stored::head_without_rows;
use super::super::{Held, ThreadView};
use crate::cold_ids::Place;
use crate::sample::Workload;
use crate::testkit::{env, packet, Shelf};
use crate::{fold, View};

/// Folds `events` as a runner does, committing every 192 events and keeping 16.
fn live(events: &[Envelope]) -> (ThreadView, Shelf) {
    let mut view = ThreadView::default();
    let mut store = Shelf::default();
    for chunk in events.chunks(192) {
        store.warm(&mut view, chunk);
        for e in chunk {
            view.apply(e);
        }
        store.commit(&mut view, false, 16);
    }
    (view, store)
}

/// A packet into thread `thread`, after `events`.
fn sent_into(events: &[Envelope], thread: &str) -> Envelope {
    let next = events.iter().map(|e| e.sequence + 1).max().unwrap_or(0);
    let packet = packet(u128::from(next) << 64, thread, "U:Ox", "U:Vz", 5);
    env(next, 0, PacketSent { packet })
}

// REQ-004-US-008-005: a thread id the filter of let-go ids wrongly says "maybe" for
// costs one read of its (absent) index row; the packet opens a new thread, as in the
// view folded whole.
#[test]
fn a_false_positive_of_the_filter_reads_one_row_and_opens_a_new_thread() {
    let mut events = Workload::new(7).envelopes(6_000);
    let (mut view, store) = live(&events);
    assert!(view.cold_threads.len() > 100, "threads were let go of");
    // Fill the filters as a long run would (65,536 ids); a few hundred let-go threads
    // leave them nearly empty.
    for k in 0..65_000 {
        let filler = format!("filler-{k}");
        view.cold_threads.row_written(filler.as_str(), 0);
        view.cold_threads.let_go(filler.as_str());
    }
    let fresh = (0..2_000_000u32)
        .map(|k| format!("fresh-{k}"))
        .find(|id| matches!(view.cold_threads.place(id.as_str()), Place::Row(_)))
        .expect("a false positive among two million ids");
    assert!(view
        .find_thread(&fresh)
        .is_some_and(|h| matches!(h, Held::Indexed(_))));
    let e = sent_into(&events, &fresh);
    let sent = match &e.record.event {
        orchestrata_schemas::events::Event::PacketSent(p) => p.packet.message_id,
        _ => unreachable!("sent_into sends"),
    };
    assert_eq!(
        store.warm(&mut view, std::slice::from_ref(&e)),
        1,
        "one row read"
    );
    view.apply(&e);
    events.push(e);
    let whole: ThreadView = fold(&events);
    let thread = view.thread(&fresh).expect("opened");
    assert_eq!(Some(thread), whole.thread(&fresh));
    assert_eq!(
        (thread.message_count, &thread.packets[..]),
        (1, &[sent][..])
    );
}

// ISSUE-18: a store written before index rows existed is restored whole (nothing can
// be found once let go without its row) and written whole, rows included, by the next
// commit; from then on the view lets go and finds every entry again.
#[test]
fn a_store_without_index_rows_is_restored_whole_then_written_whole_with_them() {
    let events = Workload::new(11).envelopes(8_000);
    let (earlier, mut store) = (&events[..5_000], &events[5_000..]);
    let (_, mut shelf) = live(earlier);
    shelf.entries.retain(|k, _| !matches!(k[0], b'P' | b'T'));
    shelf.head = head_without_rows(&shelf.head);
    let mut restorer = ThreadView::restorer(&shelf.head, 16).expect("head decodes");
    for (k, v) in &shelf.entries {
        restorer.entry(k.clone(), v.clone()).expect("entry decodes");
    }
    let mut view = restorer.finish().expect("finishes");
    // A runner confirms what it loaded, as it does for any store of the current form.
    view.committed(16);
    let so_far: ThreadView = fold(earlier);
    assert_eq!(
        view.packets_in_memory(),
        so_far.packet_count(),
        "kept whole"
    );
    for chunk in store.chunks(192) {
        shelf.warm(&mut view, chunk);
        for e in chunk {
            view.apply(e);
        }
        shelf.commit(&mut view, false, 16);
        store = &[];
    }
    let _ = store;
    let whole: ThreadView = fold(&events);
    assert!(
        view.packets_in_memory() <= 16,
        "lets go once rows are stored"
    );
    let rows = shelf.entries.keys().filter(|k| k[0] == b'P').count();
    assert_eq!(rows, whole.packet_count(), "a row for every packet");
    for (_, id) in &whole.by_sequence {
        let found = match view.find_packet(id).expect("found") {
            Held::Memory(p) => p.clone(),
            Held::Stored(key) => ThreadView::decode_packet(&shelf.entries[&key]).expect("decodes"),
            Held::Indexed(rows) => {
                let (row, value) = rows
                    .iter()
                    .find_map(|row| Some((row, shelf.entries.get(row)?)))
                    .expect("a stored row");
                let key = ThreadView::indexed_key(row, value).expect("row");
                ThreadView::decode_packet(&shelf.entries[&key]).expect("decodes")
            }
        };
        assert_eq!(Some(&found), whole.packet(id), "packet {id}");
    }
    let restored: ThreadView = shelf.restore();
    assert_eq!(restored, whole);
}
