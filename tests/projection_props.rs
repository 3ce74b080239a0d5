//! Property: however events are delivered — all at once, in random batches with
//! re-deliveries, or with the streams interleaved differently — each view folds to the
//! same value as a rebuild from scratch, byte for byte as JSON.

use orchestrata_projections::sample::Workload;
use orchestrata_projections::{fold, DecisionIndex, SessionView, ThreadView, View, VolkView};
use orchestrata_schemas::events::Envelope;
use proptest::prelude::*;

/// Applies `events` in batches of the given sizes; after each batch, re-delivers a few
/// earlier events picked by `redeliver` (as a runner restarting from an old checkpoint
/// or a duplicated tail would).
fn delivered<V: View>(events: &[Envelope], splits: &[usize], redeliver: &[u16]) -> V {
    let mut view = V::default();
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

/// The same events with the streams interleaved another way (per-stream order kept):
/// every event of one stream, then the others.
fn regrouped(events: &[Envelope]) -> Vec<Envelope> {
    let mut sorted = events.to_vec();
    sorted.sort_by_key(|e| std::cmp::Reverse(e.stream));
    sorted
}

fn check<V: View>(
    events: &[Envelope],
    splits: &[usize],
    redeliver: &[u16],
) -> Result<(), TestCaseError> {
    let rebuilt = serde_json::to_string(&fold::<V>(events)).expect("serializes");
    let batched =
        serde_json::to_string(&delivered::<V>(events, splits, redeliver)).expect("serializes");
    prop_assert_eq!(&batched, &rebuilt, "{} batched", V::NAME);
    let interleaved = serde_json::to_string(&fold::<V>(&regrouped(events))).expect("serializes");
    prop_assert_eq!(&interleaved, &rebuilt, "{} regrouped", V::NAME);
    let stored: V = serde_json::from_str(&rebuilt).expect("parses");
    prop_assert_eq!(
        serde_json::to_string(&stored).expect("serializes"),
        rebuilt,
        "{} round trip",
        V::NAME
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    // REQ-004-INTG-011 REQ-004-US-004-012 REQ-004-US-005-012 REQ-004-US-008-006
    #[test]
    fn every_view_is_independent_of_batching_redelivery_and_interleaving(
        seed in any::<u64>(),
        n in 1usize..1500,
        splits in prop::collection::vec(1usize..200, 1..20),
        redeliver in prop::collection::vec(any::<u16>(), 1..20),
    ) {
        let events = Workload::new(seed).envelopes(n);
        check::<ThreadView>(&events, &splits, &redeliver)?;
        check::<SessionView>(&events, &splits, &redeliver)?;
        check::<VolkView>(&events, &splits, &redeliver)?;
        check::<DecisionIndex>(&events, &splits, &redeliver)?;
    }
}
