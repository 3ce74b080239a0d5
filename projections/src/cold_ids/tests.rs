use std::collections::{HashMap, HashSet};

use proptest::prelude::*;

use super::*;
use crate::let_go::STAMP_SLACK_MS;

#[derive(Debug, Clone)]
enum Op {
    /// Let go of these keys (those in memory), as a commit does.
    LetGo(Vec<u8>),
    /// Read key back into memory (if let go of).
    Back(u8),
}

/// What the runner does for an id not in memory: asks [`ColdIds::place`], reads the
/// index row it names (`rows`: the store's index, id -> sequence, each row in the
/// generation of its sequence), and asks again until told where or nowhere.
fn locate(cold: &mut ColdIds<String>, rows: &HashMap<String, u64>, id: &str) -> Option<u64> {
    for _ in 0..64 {
        match cold.place(id) {
            Place::Nowhere => return None,
            Place::Stored(at) => return Some(at),
            Place::Row(g) => {
                let at = rows.get(id).copied().filter(|at| generation(*at) == g);
                cold.found(id.to_owned(), g, at);
            }
        }
    }
    panic!("{id}: still asks for rows after 64 reads");
}

/// The view's clock in the tests (ms since the epoch).
const CLOCK: u64 = 1_780_000_000_000;

/// A UUID v7 as text, carrying `ms` and `tag` in its random bits.
fn v7(ms: u64, tag: u32) -> String {
    let mut random = [0u8; 10];
    random[..4].copy_from_slice(&tag.to_be_bytes());
    uuid::Builder::from_unix_timestamp_millis(ms, &random)
        .into_uuid()
        .to_string()
}

/// Key `k`'s id: a made-up name, a v7 id stamped before the clock, or one stamped
/// further ahead of it than the slack (a client's, or a clock far off).
fn name(k: u8) -> String {
    match k % 3 {
        0 => format!("thread-{k}"),
        1 => v7(CLOCK - 5_000 + u64::from(k), u32::from(k)),
        _ => v7(CLOCK + STAMP_SLACK_MS + 1 + u64::from(k), u32::from(k)),
    }
}

proptest! {
    // ISSUE-18: entries let go, read back and let go again are found, through the
    // store's index rows, exactly as a map of let-go ids finds them — made-up ids,
    // stamped v7 ids and v7 ids stamped ahead alike; ids never let go (and the
    // filters' false positives) are found nowhere, v7 ones older than the newest let
    // go of included.
    #[test]
    fn cold_ids_answer_as_a_map(
        ops in prop::collection::vec(
            prop_oneof![
                prop::collection::vec(any::<u8>(), 0..20).prop_map(Op::LetGo),
                any::<u8>().prop_map(Op::Back),
            ],
            0..60,
        ),
        settle_every in 1usize..5,
    ) {
        // Sixteen generations of rows.
        let at = |k: u8| u64::from(k) << 12;
        let mut cold: ColdIds<String> = ColdIds::default();
        cold.tick(chrono::DateTime::from_timestamp_millis(CLOCK as i64).unwrap_or_default());
        // The store's index rows: written with an entry, never removed.
        let mut rows: HashMap<String, u64> = HashMap::new();
        let mut let_go: HashMap<String, u64> = HashMap::new();
        let mut in_memory: HashSet<u8> = (0..=255).collect();
        for (step, op) in ops.into_iter().enumerate() {
            if step % settle_every == 0 {
                cold.settle();
            }
            match op {
                Op::LetGo(keys) => {
                    for k in keys {
                        if in_memory.remove(&k) {
                            if rows.insert(name(k), at(k)).is_none() {
                                cold.row_written(name(k).as_str(), at(k));
                            }
                            let_go.insert(name(k), at(k));
                            cold.let_go(name(k).as_str());
                        }
                    }
                }
                Op::Back(k) => {
                    if let_go.remove(&name(k)).is_some() {
                        prop_assert_eq!(locate(&mut cold, &rows, &name(k)), Some(at(k)));
                        cold.taken_back(name(k).as_str());
                        in_memory.insert(k);
                    }
                }
            }
            prop_assert_eq!(cold.len(), let_go.len());
        }
        for k in 0..=255u8 {
            if !in_memory.contains(&k) {
                prop_assert_eq!(locate(&mut cold, &rows, &name(k)), let_go.get(&name(k)).copied());
            }
        }
        for k in 0..1000u32 {
            let never = format!("never-{k}");
            prop_assert_eq!(locate(&mut cold, &rows, &never), None);
            // Stamped among the let-go ones, and after them.
            let older = v7(CLOCK - 5_000 + u64::from(k % 256), 1_000 + k);
            prop_assert_eq!(locate(&mut cold, &rows, &older), None);
            prop_assert_eq!(locate(&mut cold, &rows, &v7(CLOCK + u64::from(k), k)), None);
        }
    }
}

/// Ids the server stamps take no filter bits once let go of; a newer one is known
/// never let go of without a filter, an older one is looked for in the rows. An id
/// stamped past the clock and its slack takes filter bits, and moves nothing.
// ISSUE-18: bounded memory
#[test]
fn stamped_ids_take_no_filter_bits_and_ids_stamped_ahead_do() {
    let mut cold: ColdIds<uuid::Uuid> = ColdIds::default();
    let clock = chrono::DateTime::from_timestamp_millis(CLOCK as i64).unwrap_or_default();
    let id = |ms: u64, tag: u32| v7(ms, tag).parse::<uuid::Uuid>().unwrap_or_default();
    // Before the view folded any event, nothing is believed stamped.
    cold.let_go(&id(CLOCK, 0));
    assert!(cold.seen.filter_bytes() > 0);
    let mut cold: ColdIds<uuid::Uuid> = ColdIds::default();
    cold.tick(clock);
    for k in 0..100_000u32 {
        let stamped = id(CLOCK - 60_000 + u64::from(k / 2), k);
        cold.row_written(&stamped, u64::from(k) * 5);
        cold.let_go(&stamped);
    }
    assert_eq!((cold.len(), cold.seen.filter_bytes()), (100_000, 0));
    assert_eq!(cold.seen.stamped_through(), Some(CLOCK - 60_000 + 49_999));
    assert_eq!(
        cold.place(&id(CLOCK, 7)),
        Place::Nowhere,
        "newer: no filter asked"
    );
    assert!(matches!(
        cold.place(&id(CLOCK - 60_000 + 10, 20)),
        Place::Row(_)
    ));
    assert_eq!(cold.place(&uuid::Uuid::from_u128(7)), Place::Nowhere);
    // A client's id stamped an hour ahead goes to the filter; the watermark stays.
    let ahead = id(CLOCK + 3_600_000, 1);
    cold.row_written(&ahead, 600_000);
    cold.let_go(&ahead);
    assert!(cold.seen.filter_bytes() > 0);
    assert_eq!(cold.seen.stamped_through(), Some(CLOCK - 60_000 + 49_999));
    assert!(matches!(cold.place(&ahead), Place::Row(_)));
    assert_eq!(cold.place(&id(CLOCK + 1, 8)), Place::Nowhere);
}

// A generation's filter that wrongly says "maybe" costs one read of a row the store
// does not hold; the next generation is read then, and what the rows said is
// forgotten at the next let-go.
#[test]
fn a_false_positive_costs_one_read_and_is_remembered_until_settled() {
    let mut cold: ColdIds<String> = ColdIds::default();
    let (id, at) = ("t1".to_owned(), 5u64);
    cold.row_written(id.as_str(), at);
    cold.let_go(id.as_str());
    // The newer generation's filter holds the id too, as a false positive would.
    let newer = generation(at) + 3;
    cold.row_written(id.as_str(), newer << GENERATION_BITS);
    assert_eq!(cold.place(id.as_str()), Place::Row(newer), "newest first");
    cold.found(id.clone(), newer, None);
    assert_eq!(cold.place(id.as_str()), Place::Row(generation(at)));
    cold.found(id.clone(), generation(at), Some(at));
    assert_eq!(cold.place(id.as_str()), Place::Stored(at));
    cold.settle();
    assert_eq!(
        cold.place(id.as_str()),
        Place::Row(newer),
        "forgotten after a let-go"
    );
    assert_eq!(cold.place("never let go"), Place::Nowhere);
}

#[test]
fn let_go_ids_take_a_few_bytes_each() {
    let mut cold: ColdIds<uuid::Uuid> = ColdIds::default();
    let n = 300_000u64;
    for k in 0..n {
        let id = uuid::Uuid::from_u128(u128::from(k));
        // ~26,000 packets a generation of 65,536 events, as under `cxp.send` load.
        cold.row_written(&id, k * 5 / 2);
        cold.let_go(&id);
    }
    assert_eq!(cold.len(), 300_000);
    let bytes = cold.filter_bytes();
    // The let-go filter (~2-4 bytes an id) and the generations' (~2-4 more), against
    // 24 bytes an id in sorted runs.
    assert!(bytes <= 8 * 300_000, "{bytes} bytes for 300,000 ids");
}

/// Under steady load every generation holds about as many ids as the one before: each
/// generation after the first is one layer sized for them (a first layer of 4,096 that
/// doubled took three layers and up to twice the bits).
#[test]
fn a_generations_filter_is_sized_for_the_ids_of_the_one_before() {
    let mut cold: ColdIds<uuid::Uuid> = ColdIds::default();
    // 13,107 ids a generation of 65,536 events (five events a packet).
    let n = 13_107u64 * 8;
    for k in 0..n {
        cold.row_written(&uuid::Uuid::from_u128(u128::from(k)), k * 5);
    }
    let filters: Vec<&Seen> = cold.generations.values().map(Generation::filter).collect();
    assert_eq!(filters.len(), 8);
    assert_eq!(filters[0].layer_count(), 3, "4,096 doubled twice");
    for (g, filter) in filters.iter().enumerate().skip(1) {
        assert_eq!(filter.layer_count(), 1, "generation {g}");
        let per_id = filter.bytes() as f64 / filter.len() as f64;
        assert!(per_id < 2.6, "generation {g}: {per_id} bytes an id");
    }
}
