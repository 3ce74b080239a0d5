//! [`SortedRuns`]: a map that only grows, of small fixed-size keys and values (message
//! ids, decision ids, command ids with a sequence or nothing), in the size of its
//! entries and no more.
//!
//! A fold that must remember every id it ever saw — the kernel's executed commands, so
//! that none is executed again — keeps the ids here while the rest of each entry
//! leaves memory. (The views' let-go packets and threads are found through index rows
//! in their store instead, at a few bytes an id in memory: `cold_ids.rs`.) A `BTreeMap<Uuid, u64>` takes ~40 bytes
//! an entry and a `HashSet<Uuid>` ~30–44 with its spare capacity; at a million sends
//! those are the bytes that follow the history. Here an entry takes its own size (24
//! bytes for `(Uuid, u64)`, 16 for `(Uuid, ())`) and nothing is allocated per entry.
//!
//! New entries wait in a small staging map; every [`STAGE`] of them become a sorted
//! run, merged with the run before it while that one is not longer (a binary counter).
//! So there are O(log n) runs, a look-up is the staging map plus a binary search in
//! each run, and an entry is moved O(log n) times in all. A merge briefly holds both
//! runs and the merged one: at most twice the largest run.

use std::collections::BTreeMap;

/// How many new entries wait in the staging map before they become a run.
pub const STAGE: usize = 1024;

/// A grow-only map kept as sorted runs; see the module docs.
#[derive(Debug, Clone)]
pub struct SortedRuns<K, V> {
    staged: BTreeMap<K, V>,
    /// Sorted by key; each run longer than the next.
    runs: Vec<Vec<(K, V)>>,
    len: usize,
}

impl<K, V> Default for SortedRuns<K, V> {
    fn default() -> Self {
        SortedRuns {
            staged: BTreeMap::new(),
            runs: Vec::new(),
            len: 0,
        }
    }
}

impl<K: Ord + Copy, V: Copy> SortedRuns<K, V> {
    /// The value of `key`, if it is held.
    pub fn get(&self, key: &K) -> Option<&V> {
        self.staged.get(key).or_else(|| {
            self.runs.iter().find_map(|run| {
                run.binary_search_by(|(k, _)| k.cmp(key))
                    .ok()
                    .map(|i| &run[i].1)
            })
        })
    }

    /// Whether `key` is held.
    pub fn contains(&self, key: &K) -> bool {
        self.get(key).is_some()
    }

    /// Adds `key` with `value`; `false` (and nothing changed) if `key` is already held.
    pub fn insert(&mut self, key: K, value: V) -> bool {
        if self.contains(&key) {
            return false;
        }
        self.staged.insert(key, value);
        self.len += 1;
        if self.staged.len() >= STAGE {
            let run: Vec<_> = std::mem::take(&mut self.staged).into_iter().collect();
            self.push_run(run);
        }
        true
    }

    /// Adds entries whose keys are not held yet (a caller that knows it, such as a
    /// fold letting entries go, skips the look-ups [`insert`](Self::insert) makes).
    /// Keys are not checked: one already held would be counted twice.
    pub fn extend_new(&mut self, mut batch: Vec<(K, V)>) {
        if batch.is_empty() {
            return;
        }
        batch.sort_unstable_by_key(|a| a.0);
        self.len += batch.len();
        self.push_run(batch);
    }

    fn push_run(&mut self, run: Vec<(K, V)>) {
        self.runs.push(run);
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

    /// How many entries are held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every entry, in key order.
    pub fn sorted(&self) -> Vec<(K, V)> {
        let mut all: Vec<_> = self
            .runs
            .iter()
            .flatten()
            .copied()
            .chain(self.staged.iter().map(|(k, v)| (*k, *v)))
            .collect();
        all.sort_unstable_by_key(|a| a.0);
        all
    }
}

impl<K: Ord + Copy, V: Copy + PartialEq> PartialEq for SortedRuns<K, V> {
    /// The same entries, however they are split into runs.
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.sorted() == other.sorted()
    }
}

fn merge<K: Ord, V>(a: Vec<(K, V)>, b: Vec<(K, V)>) -> Vec<(K, V)> {
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
        // ISSUE-18: whatever mix of single inserts and batches, the runs answer as a
        // HashMap does: every key with its first value, unknown keys absent, the count exact.
        #[test]
        fn runs_answer_as_a_hash_map(
            ops in prop::collection::vec(
                prop_oneof![
                    (0u32..3_000, any::<u16>()).prop_map(|(k, v)| vec![(k, v)]),
                    prop::collection::vec((0u32..3_000, any::<u16>()), 0..300),
                ],
                0..40,
            ),
        ) {
            let mut runs = SortedRuns::default();
            let mut map = HashMap::new();
            for op in ops {
                if op.len() == 1 {
                    let (k, v) = op[0];
                    prop_assert_eq!(runs.insert(k, v), !map.contains_key(&k));
                    map.entry(k).or_insert(v);
                } else {
                    let mut fresh = Vec::new();
                    for (k, v) in op {
                        if let std::collections::hash_map::Entry::Vacant(e) = map.entry(k) {
                            e.insert(v);
                            fresh.push((k, v));
                        }
                    }
                    runs.extend_new(fresh);
                }
                prop_assert!(runs.runs.windows(2).all(|w| w[0].len() > w[1].len()));
                prop_assert!(runs.runs.iter().all(|r| r.windows(2).all(|w| w[0].0 < w[1].0)));
            }
            prop_assert_eq!(runs.len(), map.len());
            for k in 0u32..3_100 {
                prop_assert_eq!(runs.get(&k), map.get(&k), "key {}", k);
            }
            let mut all: Vec<_> = map.into_iter().collect();
            all.sort_unstable();
            prop_assert_eq!(runs.sorted(), all);
        }
    }

    #[test]
    fn staged_entries_become_few_runs() {
        let mut runs = SortedRuns::default();
        for k in 0..(STAGE * 37 + 5) {
            assert!(runs.insert(k as u64 * 7919 % 1_000_003, ()));
        }
        assert_eq!(runs.len(), STAGE * 37 + 5);
        assert!(runs.runs.len() <= 6, "{} runs", runs.runs.len());
        assert_eq!(runs.staged.len(), 5);
        assert!(!runs.insert(7919, ()), "held keys are not added twice");
    }
}
