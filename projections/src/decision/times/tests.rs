use chrono::{DateTime, Utc};
use proptest::prelude::*;

use super::{block_key, decode, StoredTimes, Times, Verdict, BLOCK};

/// Times in log order as a server may write them: mostly microseconds apart, with
/// jumps back and forth over centuries.
fn history() -> impl Strategy<Value = Vec<DateTime<Utc>>> {
    let one = (-20_000_000_000i64..20_000_000_000, 0u32..1_000_000_000);
    proptest::collection::vec(one, 0..(3 * BLOCK + 40)).prop_map(|items| {
        items
            .into_iter()
            .filter_map(|(secs, nanos)| DateTime::<Utc>::from_timestamp(secs, nanos))
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever was pushed reads back exactly, block by block: from memory, and from
    /// the bytes a commit stores once memory let them go.
    #[test]
    fn times_read_back_as_pushed(list in history()) {
        let mut times = Times::default();
        for at in &list {
            times.push(*at);
        }
        prop_assert_eq!(times.len(), list.len());
        let mut stored = StoredTimes::default();
        for block in 0..times.frozen() {
            let bytes = times.encoded(block).map(<[u8]>::to_vec);
            prop_assert!(bytes.is_some());
            stored.add(&block_key(block), &bytes.unwrap_or_default()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        }
        let mut cold = times.clone();
        cold.let_go_before(times.frozen());
        for block in 0..=times.frozen() {
            let want: Vec<_> = list.iter().skip(block * BLOCK).take(BLOCK).copied().collect();
            prop_assert_eq!(times.block(block, &StoredTimes::default()), Some(want.clone()));
            prop_assert_eq!(cold.block(block, &stored), Some(want.clone()));
            if block < times.frozen() {
                prop_assert_eq!(cold.block(block, &StoredTimes::default()), None);
            }
        }
        prop_assert_eq!(&cold, &times);
    }

    /// A block's verdict agrees with its times: `All` only if every time is within the
    /// bounds, `Nothing` only if none is.
    #[test]
    fn a_verdict_agrees_with_the_times(list in history(), from in any::<Option<i64>>(), until in any::<Option<i64>>()) {
        let bound = |s: Option<i64>| s.and_then(|s| DateTime::<Utc>::from_timestamp(s % 20_000_000_000, 0));
        let (from, until) = (bound(from), bound(until));
        let mut times = Times::default();
        for at in &list {
            times.push(*at);
        }
        for block in 0..times.frozen() {
            let inside = list[block * BLOCK..(block + 1) * BLOCK]
                .iter()
                .filter(|at| from.is_none_or(|f| **at >= f) && until.is_none_or(|u| **at < u))
                .count();
            match times.verdict(block, from, until) {
                Verdict::All => prop_assert_eq!(inside, BLOCK),
                Verdict::Nothing => prop_assert_eq!(inside, 0),
                Verdict::Mixed => {}
            }
        }
    }
}

/// A server's decisions, a few per millisecond, take about four bytes of time each (a byte of seconds, three of nanoseconds)
/// once frozen; a block's bounds and key are all memory keeps once it is stored.
#[test]
fn a_servers_times_pack_into_about_four_bytes_each() {
    let start = DateTime::<Utc>::from_timestamp(1_780_000_000, 0).unwrap_or_default();
    let mut times = Times::default();
    let n = 100 * BLOCK;
    for i in 0..n {
        times.push(start + chrono::Duration::microseconds(i as i64 * 370));
    }
    let bytes: usize = (0..times.frozen())
        .filter_map(|b| times.encoded(b))
        .map(<[u8]>::len)
        .sum();
    let per = bytes as f64 / n as f64;
    assert!(per <= 4.1, "{per} bytes a time");
}

/// What the store hands back is checked: a key that names no block, or bytes that do
/// not hold a whole block, is an error, not a wrong answer.
#[test]
fn a_malformed_stored_block_is_refused() {
    let mut times = Times::default();
    let at = DateTime::<Utc>::from_timestamp(1_780_000_000, 0).unwrap_or_default();
    for _ in 0..BLOCK {
        times.push(at);
    }
    let bytes = times.encoded(0).map(<[u8]>::to_vec).unwrap_or_default();
    let mut stored = StoredTimes::default();
    assert!(stored.add(&block_key(0), &bytes).is_ok());
    assert!(stored
        .add(&block_key(0), &bytes[..bytes.len() - 1])
        .is_err());
    assert!(stored.add(b"d\0\0\0\0\0\0\0\0", &bytes).is_err());
    assert!(stored.add(b"t\0", &bytes).is_err());
    assert_eq!(decode(&[0xff; 3]), Vec::<DateTime<Utc>>::new());
}
