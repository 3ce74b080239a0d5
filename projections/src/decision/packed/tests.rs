use chrono::{DateTime, Utc};
use orchestrata_schemas::events::types::DecisionResult;
use proptest::prelude::*;

use super::{Cursor, Packed, BLOCK};
use crate::decision::summary::Summary;

fn summary(sequence: u64, at: DateTime<Utc>, names: (u32, u32, Option<u32>), flags: u8) -> Summary {
    Summary {
        sequence,
        at,
        subject: names.0,
        action: names.1,
        principal: names.2,
        result: [
            DecisionResult::Allow,
            DecisionResult::Deny,
            DecisionResult::Escalate,
        ][usize::from(flags % 3)],
        dry_run: flags & 4 != 0,
    }
}

/// Summaries in log order: sequence gaps from 1 to huge, times jumping back and forth
/// over centuries, any ids.
fn history() -> impl Strategy<Value = Vec<Summary>> {
    let one = (
        prop_oneof![4 => 1u64..3, 1 => 1u64..u64::from(u32::MAX)],
        -20_000_000_000i64..20_000_000_000,
        0u32..1_000_000_000,
        (any::<u32>(), 0u32..4, proptest::option::of(any::<u32>())),
        any::<u8>(),
    );
    proptest::collection::vec(one, 0..(3 * BLOCK + 40)).prop_map(|items| {
        let mut sequence = 0u64;
        items
            .into_iter()
            .filter_map(|(gap, secs, nanos, names, flags)| {
                sequence = sequence.checked_add(gap)?;
                let at = DateTime::<Utc>::from_timestamp(secs, nanos)?;
                Some(summary(sequence, at, names, flags))
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever was pushed reads back exactly, by position, by sequence and in either
    /// direction through one cursor; searches by sequence answer as on the plain list.
    #[test]
    fn packed_summaries_read_back_as_pushed(list in history(), probes in proptest::collection::vec(any::<u64>(), 8)) {
        let mut packed = Packed::default();
        for s in &list {
            packed.push(s.clone());
        }
        prop_assert_eq!(packed.len(), list.len());
        for (i, s) in list.iter().enumerate() {
            prop_assert_eq!(packed.get(i), Some(s.clone()));
            prop_assert_eq!(packed.position(s.sequence), Some(i));
        }
        prop_assert_eq!(packed.get(list.len()), None);
        let mut cursor = Cursor::new(&packed);
        for i in (0..list.len()).rev() {
            prop_assert_eq!(cursor.get(i), Some(&list[i]));
        }
        let around = list.iter().flat_map(|s| [s.sequence.wrapping_sub(1), s.sequence, s.sequence.wrapping_add(1)]);
        for probe in probes.into_iter().chain(around).chain([0, u64::MAX]) {
            let expected = list.partition_point(|s| s.sequence < probe);
            prop_assert_eq!(packed.partition_point(probe), expected, "probe {}", probe);
            let held = list.binary_search_by_key(&probe, |s| s.sequence).ok();
            prop_assert_eq!(packed.position(probe), held);
        }
    }
}

/// A server's decisions (consecutive sequences, a few per millisecond, a handful of
/// names) take about nine bytes each once frozen, not the forty of a `Summary`: the
/// sub-second part is a delta of three bytes, where as written it took four or five.
#[test]
fn a_servers_decisions_pack_into_about_nine_bytes_each() {
    let start = DateTime::<Utc>::from_timestamp(1_780_000_000, 0).unwrap_or_default();
    let mut packed = Packed::default();
    let n = 100 * BLOCK;
    for i in 0..n {
        let at = start + chrono::Duration::microseconds(i as i64 * 370);
        packed.push(summary(i as u64 * 2 + 7, at, (i as u32 % 5, 1, Some(0)), 0));
    }
    let per = packed.frozen_bytes() as f64 / n as f64;
    assert!(per <= 9.1, "{per} bytes a summary");
    assert_eq!(
        packed.get(n - 1).map(|s| s.sequence),
        Some((n as u64 - 1) * 2 + 7)
    );
}
