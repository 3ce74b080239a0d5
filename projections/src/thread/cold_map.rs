//! Where the thread view's let-go packets and threads are stored, in the size of a key
//! and a sequence each.
//!
//! An entry is let go of once stored and may be read back when an event names it, then
//! let go again. Sorted runs ([`SortedRuns`]) hold every key ever let go of without a
//! per-entry allocation but cannot remove; the few keys read back and still in memory
//! are listed beside them (`back`), so a look-up answers exactly what a map with
//! removals would. An entry's store key never changes (the sequence of the event that
//! created it), so a key let go of again needs nothing new in the runs.
//!
//! Thread ids are strings. Those the kernel makes are UUIDs (in canonical form they
//! take 24 bytes here instead of a map slot and a boxed string); any other id, which a
//! client may choose, is kept in a map.

use std::collections::{HashMap, HashSet};
use std::hash::Hash;

use uuid::Uuid;

use crate::runs::SortedRuns;

/// Let-go keys with the sequence in their store key; see the module docs.
#[derive(Debug, Clone)]
pub(super) struct ColdMap<K> {
    runs: SortedRuns<K, u64>,
    /// Keys in `runs` read back into memory (and not let go again since).
    back: HashSet<K>,
}

impl<K> Default for ColdMap<K> {
    fn default() -> Self {
        ColdMap {
            runs: SortedRuns::default(),
            back: HashSet::new(),
        }
    }
}

impl<K: Ord + Hash + Copy> ColdMap<K> {
    /// The sequence of let-go `key`'s store key; `None` if it is in memory or unknown.
    pub fn get(&self, key: &K) -> Option<u64> {
        if self.back.contains(key) {
            return None;
        }
        self.runs.get(key).copied()
    }

    /// `key` was read back into memory.
    pub fn remove(&mut self, key: &K) {
        if self.runs.contains(key) {
            self.back.insert(*key);
        }
    }

    /// Lets go of `batch` (keys in memory until now).
    pub fn extend(&mut self, batch: Vec<(K, u64)>) {
        let fresh = batch
            .into_iter()
            .filter(|(key, _)| !self.back.remove(key))
            .collect();
        self.runs.extend_new(fresh);
    }

    /// How many keys are let go of.
    pub fn len(&self) -> usize {
        self.runs.len().saturating_sub(self.back.len())
    }

    /// Whether no key is let go of.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every let-go key with its sequence, in key order.
    fn sorted(&self) -> Vec<(K, u64)> {
        let mut all = self.runs.sorted();
        all.retain(|(k, _)| !self.back.contains(k));
        all
    }
}

impl<K: Ord + Hash + Copy> PartialEq for ColdMap<K> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.sorted() == other.sorted()
    }
}

/// Let-go threads: canonical UUID ids in a [`ColdMap`], others in a map.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct ColdThreads {
    uuids: ColdMap<Uuid>,
    other: HashMap<Box<str>, u64>,
}

impl ColdThreads {
    /// The sequence of let-go thread `id`'s store key.
    pub fn get(&self, id: &str) -> Option<u64> {
        match canonical_uuid(id) {
            Some(u) => self.uuids.get(&u),
            None => self.other.get(id).copied(),
        }
    }

    /// Thread `id` was read back into memory.
    pub fn remove(&mut self, id: &str) {
        match canonical_uuid(id) {
            Some(u) => self.uuids.remove(&u),
            None => {
                self.other.remove(id);
            }
        }
    }

    /// Lets go of `batch`.
    pub fn extend(&mut self, batch: Vec<(String, u64)>) {
        let mut uuids = Vec::new();
        for (id, at) in batch {
            match canonical_uuid(&id) {
                Some(u) => uuids.push((u, at)),
                None => {
                    self.other.insert(id.into_boxed_str(), at);
                }
            }
        }
        self.uuids.extend(uuids);
    }

    /// How many threads are let go of.
    pub fn len(&self) -> usize {
        self.uuids.len() + self.other.len()
    }

    /// Whether no thread is let go of.
    pub fn is_empty(&self) -> bool {
        self.uuids.is_empty() && self.other.is_empty()
    }
}

/// The UUID `id` spells in canonical form (lower-case, hyphenated), if it does: only
/// then does the UUID give back the same string.
fn canonical_uuid(id: &str) -> Option<Uuid> {
    if id.len() != uuid::fmt::Hyphenated::LENGTH {
        return None;
    }
    let u = Uuid::try_parse(id).ok()?;
    let mut buf = [0u8; uuid::fmt::Hyphenated::LENGTH];
    (u.hyphenated().encode_lower(&mut buf) == id).then_some(u)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use proptest::prelude::*;

    use super::*;

    #[derive(Debug, Clone)]
    enum Op {
        LetGo(Vec<u8>),
        Back(u8),
    }

    proptest! {
        // ISSUE-18: entries let go, read back and let go again are found as a map
        // with removals finds them.
        #[test]
        fn cold_threads_answer_as_a_map(
            ops in prop::collection::vec(
                prop_oneof![
                    prop::collection::vec(any::<u8>(), 0..20).prop_map(Op::LetGo),
                    any::<u8>().prop_map(Op::Back),
                ],
                0..60,
            ),
        ) {
            // Half the ids are canonical UUIDs, a quarter upper-case ones, the rest not UUIDs.
            let name = |k: u8| match k % 4 {
                0 | 1 => Uuid::from_u128(u128::from(k)).to_string(),
                2 => Uuid::from_u128(u128::from(k)).to_string().to_uppercase(),
                _ => format!("thread-{k}"),
            };
            let mut cold = ColdThreads::default();
            let mut map: HashMap<String, u64> = HashMap::new();
            let mut hot: HashSet<u8> = (0..=255).collect();
            for op in ops {
                match op {
                    Op::LetGo(keys) => {
                        let mut batch = Vec::new();
                        for k in keys {
                            if hot.remove(&k) {
                                batch.push((name(k), u64::from(k) * 3));
                                map.insert(name(k), u64::from(k) * 3);
                            }
                        }
                        cold.extend(batch);
                    }
                    Op::Back(k) => {
                        if map.remove(&name(k)).is_some() {
                            cold.remove(&name(k));
                            hot.insert(k);
                        }
                    }
                }
                prop_assert_eq!(cold.len(), map.len());
            }
            for k in 0..=255u8 {
                prop_assert_eq!(cold.get(&name(k)), map.get(&name(k)).copied(), "{}", name(k));
            }
        }
    }

    #[test]
    fn only_canonical_uuids_are_packed() {
        let u = Uuid::from_u128(0xfeed);
        assert_eq!(canonical_uuid(&u.to_string()), Some(u));
        assert_eq!(canonical_uuid(&u.to_string().to_uppercase()), None);
        assert_eq!(canonical_uuid(&u.simple().to_string()), None);
        assert_eq!(canonical_uuid("ünïcode-thread"), None);
    }
}
