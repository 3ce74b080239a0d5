//! [`ColdIds`]: the message ids of the packets the index let go of, each with the
//! sequence of its `packet_sent` (its key in the view store), in 24 bytes a packet.
//!
//! A let-go packet must still be found by id: a filter meeting one of its transitions
//! reads its parties from the store, and a repeated `packet_sent` of it must change
//! nothing. Its store key follows the log (`p` + sequence: a commit appends at the end
//! of the key space, so its cost follows the batch, not the history), so the id has to
//! lead to the sequence. A `BTreeMap<Uuid, u64>` takes ~40 bytes an entry, a hash map
//! ~30 with its spare capacity; sorted runs take 24 and allocate nothing per entry.
//!
//! Ids arrive in batches (the packets one commit lets go). Each batch becomes a sorted
//! run; a run is merged with the one before it while that one is not longer (a binary
//! counter), so there are O(log n) runs, a look-up is a binary search in each, and an
//! id is moved O(log n) times in all. A merge briefly holds both runs and the merged
//! one: at most twice the largest run (24 MB at a million let-go packets).

use uuid::Uuid;

/// Message ids of let-go packets and the sequence of each one's `packet_sent`.
#[derive(Debug, Clone, Default)]
pub(super) struct ColdIds {
    /// Sorted by id; each run longer than the next.
    runs: Vec<Vec<(Uuid, u64)>>,
    len: usize,
}

impl ColdIds {
    /// The sequence of packet `id`'s `packet_sent`, if it was let go.
    pub fn get(&self, id: &Uuid) -> Option<u64> {
        self.runs.iter().find_map(|run| {
            run.binary_search_by(|(k, _)| k.cmp(id))
                .ok()
                .map(|i| run[i].1)
        })
    }

    /// Adds let-go packets (ids not already here).
    pub fn extend(&mut self, mut batch: Vec<(Uuid, u64)>) {
        if batch.is_empty() {
            return;
        }
        batch.sort_unstable_by_key(|(id, _)| *id);
        self.len += batch.len();
        self.runs.push(batch);
        while let [.., older, newer] = self.runs.as_slice() {
            if older.len() > newer.len() {
                break;
            }
            let (Some(newer), Some(older)) = (self.runs.pop(), self.runs.pop()) else {
                break;
            };
            self.runs.push(merge(older, newer));
        }
    }

    /// How many ids are held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every id with its sequence, in id order.
    pub fn sorted(&self) -> Vec<(Uuid, u64)> {
        let mut all: Vec<_> = self.runs.iter().flatten().copied().collect();
        all.sort_unstable_by_key(|(id, _)| *id);
        all
    }
}

impl PartialEq for ColdIds {
    /// The same ids and sequences, however they are split into runs.
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.sorted() == other.sorted()
    }
}

fn merge(a: Vec<(Uuid, u64)>, b: Vec<(Uuid, u64)>) -> Vec<(Uuid, u64)> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut a, mut b) = (a.into_iter().peekable(), b.into_iter().peekable());
    loop {
        let next = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) if x.0 <= y.0 => a.next(),
            (Some(_), Some(_)) => b.next(),
            (Some(_), None) => a.next(),
            (None, _) => b.next(),
        };
        match next {
            Some(entry) => out.push(entry),
            None => return out,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use proptest::prelude::*;

    use super::*;

    proptest! {
        // ISSUE-18: let-go packet ids found as a map would find them, in few runs
        #[test]
        fn cold_ids_answer_as_a_map(
            batches in prop::collection::vec(prop::collection::vec(any::<u128>(), 0..40), 0..40),
            probes in prop::collection::vec(any::<u128>(), 0..20),
        ) {
            let mut cold = ColdIds::default();
            let mut map = HashMap::new();
            let mut seq = 0u64;
            for batch in batches {
                let mut fresh = Vec::new();
                for id in batch {
                    let id = Uuid::from_u128(id);
                    if let std::collections::hash_map::Entry::Vacant(e) = map.entry(id) {
                        e.insert(seq);
                        fresh.push((id, seq));
                        seq += 1;
                    }
                }
                cold.extend(fresh);
                prop_assert!(cold.runs.windows(2).all(|w| w[0].len() > w[1].len()));
                prop_assert!(cold.runs.iter().all(|r| r.windows(2).all(|w| w[0].0 < w[1].0)));
            }
            prop_assert_eq!(cold.len(), map.len());
            for (id, seq) in &map {
                prop_assert_eq!(cold.get(id), Some(*seq));
            }
            for probe in probes {
                let id = Uuid::from_u128(probe);
                prop_assert_eq!(cold.get(&id), map.get(&id).copied());
            }
        }
    }
}
