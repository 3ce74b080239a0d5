//! Property: the knowledge graph folds to the same value however events are delivered —
//! all at once, in batches with re-deliveries, or with its four streams interleaved
//! another way — byte for byte as JSON, and survives a store round trip.

use orchestrata_projections::sample::Workload;
use orchestrata_projections::{fold, GraphView, View};
use orchestrata_schemas::events::Envelope;
use proptest::prelude::*;

fn batched(events: &[Envelope], splits: &[usize], redeliver: &[u16]) -> GraphView {
    let mut view = GraphView::default();
    let mut at = 0;
    let mut split = splits.iter().cycle();
    let mut pick = redeliver.iter().cycle();
    while at < events.len() {
        let size = (*split.next().unwrap_or(&1)).max(1);
        let end = (at + size).min(events.len());
        for e in &events[at..end] {
            view.apply(e);
        }
        for _ in 0..3 {
            if let Some(p) = pick.next() {
                let again = &events[usize::from(*p) % end];
                assert!(!view.apply(again), "a re-delivered event must be ignored");
            }
        }
        at = end;
    }
    view
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    // REQ-004-INTG-011 REQ-014-156 REQ-014-157
    #[test]
    fn the_graph_is_independent_of_batching_redelivery_and_interleaving(
        seed in any::<u64>(),
        n in 1usize..1500,
        splits in prop::collection::vec(1usize..200, 1..20),
        redeliver in prop::collection::vec(any::<u16>(), 1..20),
        rotate in 0usize..4,
    ) {
        let events = Workload::new(seed).envelopes(n);
        let rebuilt = serde_json::to_string(&fold::<GraphView>(&events)).expect("serializes");
        let again = serde_json::to_string(&batched(&events, &splits, &redeliver)).expect("serializes");
        prop_assert_eq!(&again, &rebuilt, "batched");
        // Streams one after the other, starting with a different one each case.
        let mut streams: Vec<_> = GraphView::STREAMS.to_vec();
        streams.rotate_left(rotate);
        let regrouped: Vec<Envelope> = streams
            .iter()
            .flat_map(|s| events.iter().filter(move |e| e.stream == *s).cloned())
            .collect();
        let interleaved = serde_json::to_string(&fold::<GraphView>(&regrouped)).expect("serializes");
        prop_assert_eq!(&interleaved, &rebuilt, "regrouped");
        let stored: GraphView = serde_json::from_str(&rebuilt).expect("parses");
        prop_assert_eq!(serde_json::to_string(&stored).expect("serializes"), rebuilt, "round trip");
    }
}
