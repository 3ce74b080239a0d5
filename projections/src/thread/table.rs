//! [`Table`]: the thread view's storage for threads and packets — entries in a `Vec`,
//! found through a hash index, serialized as a map sorted by key.
//!
//! The fold looks an entry up on nearly every event. A `BTreeMap<String, _>` pays a
//! byte-by-byte key comparison at every level of the tree (36-byte thread ids); a hash
//! index pays one hash and one comparison. The entries themselves sit in a `Vec` in
//! insertion order, unboxed (a large `Vec` grows by remapping pages, not copying), and
//! the index holds only their positions: each entry's key lives once, inside the entry.
//!
//! Readers still see the order they saw with a sorted map: [`Table::sorted`] and the
//! serialized form go in key order, computed on demand and cached until the next insert.
//! So a view serializes byte for byte as it did when these were `BTreeMap`s, and views
//! stored by earlier versions load unchanged.

use std::fmt;
use std::hash::{BuildHasher, Hash};
use std::marker::PhantomData;
use std::sync::OnceLock;

use foldhash::fast::FixedState;
use hashbrown::HashTable;
use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::stored::Dirty;

/// An entry that carries its own key.
pub(super) trait Keyed {
    /// The key: unique within a table, ordered for serialization.
    type Key: ?Sized + Hash + Eq + Ord + Serialize;
    /// This entry's key.
    fn key(&self) -> &Self::Key;
}

/// Entries of `V` by key: hash look-ups, insertion-ordered storage, key-ordered reads.
pub(super) struct Table<V> {
    entries: Vec<V>,
    /// Positions in `entries`, hashed by their entry's key.
    index: HashTable<u32>,
    /// Positions in key order; filled by the first ordered read after an insert.
    sorted: OnceLock<Vec<u32>>,
    /// Positions changed (or possibly changed: handed out by `get_mut`) since the
    /// last commit took them.
    dirty: Dirty,
    /// Positions the commit in flight took (ascending), forgotten once the store
    /// confirms it ([`Table::stored`]) and taken again by the next commit if it
    /// failed. Kept apart from `dirty` so that the view may fold on while its commit
    /// is written: what changes meanwhile stays marked for the next one.
    flight: Vec<u32>,
    /// Per position, the sequence of the last event that touched the entry: which
    /// entries [`Table::evict`] keeps. Bookkeeping, not part of the value.
    stamps: Vec<u64>,
    /// The sequence stamped on entries touched from now on ([`Table::at`]).
    now: u64,
}

/// Fixed seeds: the index is never iterated, so its layout cannot leak into any output.
const HASHER: FixedState = FixedState::with_seed(0x6f72_6368_6573_7472);

fn hash<K: ?Sized + Hash>(key: &K) -> u64 {
    HASHER.hash_one(key)
}

impl<V> Default for Table<V> {
    fn default() -> Self {
        Self {
            entries: Vec::new(),
            index: HashTable::new(),
            sorted: OnceLock::new(),
            dirty: Dirty::default(),
            flight: Vec::new(),
            stamps: Vec::new(),
            now: 0,
        }
    }
}

impl<V: Keyed> Table<V> {
    /// Number of entries.
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The position of `key`'s entry.
    fn position(&self, key: &V::Key) -> Option<usize> {
        let entries = &self.entries;
        self.index
            .find(hash(key), |&i| entries[i as usize].key() == key)
            .map(|&i| i as usize)
    }

    /// Whether an entry has this key.
    pub(super) fn contains(&self, key: &V::Key) -> bool {
        self.position(key).is_some()
    }

    /// The entry with this key.
    pub(super) fn get(&self, key: &V::Key) -> Option<&V> {
        self.position(key).map(|i| &self.entries[i])
    }

    /// The entry with this key, to change it. Its key must not change.
    pub(super) fn get_mut(&mut self, key: &V::Key) -> Option<&mut V> {
        let i = self.position(key)?;
        self.dirty.mark(position(i), self.entries.len());
        self.stamps[i] = self.now;
        Some(&mut self.entries[i])
    }

    /// The entry with this key, first inserting `make()` (whose key must be `key`) if
    /// there is none: one hash search either way.
    pub(super) fn get_or_insert_with(&mut self, key: &V::Key, make: impl FnOnce() -> V) -> &mut V {
        let entries = &mut self.entries;
        let i = match self.index.entry(
            hash(key),
            |&i| entries[i as usize].key() == key,
            |&i| hash(entries[i as usize].key()),
        ) {
            hashbrown::hash_table::Entry::Occupied(slot) => *slot.get() as usize,
            hashbrown::hash_table::Entry::Vacant(slot) => {
                let i = entries.len();
                slot.insert(position(i));
                entries.push(make());
                self.stamps.push(self.now);
                self.sorted = OnceLock::new();
                i
            }
        };
        self.dirty.mark(position(i), entries.len());
        self.stamps[i] = self.now;
        &mut entries[i]
    }

    /// Inserts `entry`, unless one with its key is already there (then `entry` is
    /// dropped and `false` returned: the first one counts).
    pub(super) fn insert(&mut self, entry: V) -> bool {
        let at = self.entries.len();
        let inserted = self.insert_unmarked(entry);
        if inserted {
            self.dirty.mark(position(at), at + 1);
        }
        inserted
    }

    /// [`insert`](Self::insert) without marking the entry changed: for an entry read
    /// back from the store, which holds it as it is.
    pub(super) fn insert_unmarked(&mut self, entry: V) -> bool {
        let key_hash = hash(entry.key());
        let entries = &mut self.entries;
        match self.index.entry(
            key_hash,
            |&i| entries[i as usize].key() == entry.key(),
            |&i| hash(entries[i as usize].key()),
        ) {
            hashbrown::hash_table::Entry::Occupied(_) => false,
            hashbrown::hash_table::Entry::Vacant(slot) => {
                slot.insert(position(entries.len()));
                entries.push(entry);
                self.stamps.push(self.now);
                self.sorted = OnceLock::new();
                true
            }
        }
    }

    /// Stamps entries touched from now on with `sequence` (the event being folded).
    pub(super) fn at(&mut self, sequence: u64) {
        self.now = sequence;
    }

    /// What a commit writes, each entry once: the entries changed since the last
    /// commit took them, with those a commit that failed had taken (every entry when
    /// `all`). They are the commit in flight until [`stored`](Self::stored) confirms
    /// it; entries changed after this call stay marked for the next commit.
    pub(super) fn changed(&mut self, all: bool) -> Vec<&V> {
        let mut taken = std::mem::take(&mut self.flight);
        taken.extend(self.dirty.take());
        if all {
            self.flight = (0..self.entries.len()).map(position).collect();
            return self.entries.iter().collect();
        }
        taken.sort_unstable();
        taken.dedup();
        self.flight = taken;
        self.flight
            .iter()
            .filter_map(|&i| self.entries.get(i as usize))
            .collect()
    }

    /// The commit in flight is stored: what it took is forgotten.
    pub(super) fn stored(&mut self) {
        self.flight = Vec::new();
    }

    /// Lets go of every entry but the `keep` touched most recently (ties: the later
    /// inserted stays) and hands them out. Only a table with no commit in flight lets
    /// anything go (it is called right after a commit is stored); an entry changed
    /// since that commit took its changes stays whatever its age, since the store does
    /// not hold it as it is.
    pub(super) fn evict(&mut self, keep: usize) -> Vec<V> {
        let len = self.entries.len();
        if len <= keep || !self.flight.is_empty() {
            return Vec::new();
        }
        let marked = self.dirty.take();
        let mut order: Vec<u32> = (0..len).map(position).collect();
        order.sort_unstable_by_key(|&i| (self.stamps[i as usize], i));
        let mut going = vec![false; len];
        for &i in &order[..len - keep] {
            going[i as usize] = true;
        }
        for &i in &marked {
            if let Some(g) = going.get_mut(i as usize) {
                *g = false;
            }
        }
        let kept_len = len - going.iter().filter(|g| **g).count();
        let entries = std::mem::replace(&mut self.entries, Vec::with_capacity(kept_len));
        let stamps = std::mem::replace(&mut self.stamps, Vec::with_capacity(kept_len));
        self.index = HashTable::with_capacity(kept_len);
        self.sorted = OnceLock::new();
        // Where each kept entry lands: the marks follow their entries.
        let mut moved = vec![u32::MAX; len];
        let mut gone = Vec::with_capacity(len - kept_len);
        for (old, ((entry, stamp), going)) in entries.into_iter().zip(stamps).zip(going).enumerate()
        {
            if going {
                gone.push(entry);
                continue;
            }
            let at = position(self.entries.len());
            moved[old] = at;
            let kept = &self.entries;
            self.index
                .insert_unique(hash(entry.key()), at, |&i| hash(kept[i as usize].key()));
            self.entries.push(entry);
            self.stamps.push(stamp);
        }
        let kept = self.entries.len();
        for i in marked {
            if let Some(&at) = moved.get(i as usize) {
                self.dirty.mark(at, kept);
            }
        }
        gone
    }

    /// Forgets every change (a table just restored from its store has none).
    pub(super) fn forget_changes(&mut self) {
        self.dirty.clear();
        self.flight = Vec::new();
    }

    /// Every entry in key order (what a `BTreeMap` would give).
    pub(super) fn sorted(&self) -> impl ExactSizeIterator<Item = &V> + '_ {
        let order = self.sorted.get_or_init(|| {
            let mut order: Vec<u32> = (0..self.entries.len()).map(position).collect();
            order.sort_unstable_by(|&a, &b| {
                self.entries[a as usize]
                    .key()
                    .cmp(self.entries[b as usize].key())
            });
            order
        });
        order.iter().map(|&i| &self.entries[i as usize])
    }
}

/// A position as stored in the index. A view holds far fewer than 2^32 threads or
/// packets (each is hundreds of bytes of memory), so the narrowing cannot lose bits in
/// practice; it saturates rather than wraps if it ever did.
fn position(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

impl<V: Clone> Clone for Table<V> {
    fn clone(&self) -> Self {
        Self {
            entries: self.entries.clone(),
            index: self.index.clone(),
            sorted: self.sorted.clone(),
            dirty: self.dirty.clone(),
            flight: self.flight.clone(),
            stamps: self.stamps.clone(),
            now: self.now,
        }
    }
}

/// Equal when they hold the same entries, whatever the insertion order.
impl<V: Keyed + PartialEq> PartialEq for Table<V> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len()
            && self
                .entries
                .iter()
                .all(|e| other.get(e.key()).is_some_and(|o| o == e))
    }
}

impl<V: Keyed + fmt::Debug> fmt::Debug for Table<V>
where
    V::Key: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.sorted().map(|e| (e.key(), e)))
            .finish()
    }
}

/// A map from key to entry, in key order: the form of a `BTreeMap<Key, V>`.
impl<V: Keyed + Serialize> Serialize for Table<V> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.len()))?;
        for entry in self.sorted() {
            map.serialize_entry(entry.key(), entry)?;
        }
        map.end()
    }
}

/// Reads the map [`Serialize`] writes. Each entry's key is taken from the entry itself
/// (the map key repeats it); a repeated key keeps the first entry.
impl<'de, V: Keyed + Deserialize<'de>> Deserialize<'de> for Table<V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Entries<V>(PhantomData<V>);
        impl<'de, V: Keyed + Deserialize<'de>> Visitor<'de> for Entries<V> {
            type Value = Table<V>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map from key to entry")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Table<V>, A::Error> {
                let mut table = Table::default();
                table
                    .entries
                    .reserve(map.size_hint().unwrap_or(0).min(1 << 16));
                while let Some((IgnoredAny, entry)) = map.next_entry::<IgnoredAny, V>()? {
                    table.insert(entry);
                }
                table.forget_changes();
                Ok(table)
            }
        }
        deserializer.deserialize_map(Entries(PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Serialize};

    use super::{Keyed, Table};

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Row {
        id: String,
        n: u32,
    }

    impl Keyed for Row {
        type Key = str;
        fn key(&self) -> &str {
            &self.id
        }
    }

    fn row(id: &str, n: u32) -> Row {
        Row { id: id.into(), n }
    }

    // REQ-004-US-008-005
    #[test]
    fn finds_by_key_and_keeps_the_first_of_a_repeated_key() {
        let mut table = Table::default();
        assert!(table.insert(row("b", 1)));
        assert!(table.insert(row("a", 2)));
        assert!(!table.insert(row("b", 3)), "a repeated key is refused");
        assert_eq!(table.len(), 2);
        assert_eq!(table.get("b").map(|r| r.n), Some(1));
        assert!(table.get("c").is_none());
        assert!(!table.contains("c"));
        table.get_or_insert_with("c", || row("c", 4)).n += 10;
        assert_eq!(table.get_or_insert_with("c", || row("c", 99)).n, 14);
        if let Some(r) = table.get_mut("a") {
            r.n = 7;
        }
        assert_eq!(table.get("a").map(|r| r.n), Some(7));
    }

    // REQ-004-US-008-005
    #[test]
    fn serializes_byte_for_byte_like_a_sorted_map_and_reads_it_back() {
        let mut table = Table::default();
        let mut map = BTreeMap::new();
        for (i, id) in ["m", "z", "a", "q", "b"].into_iter().enumerate() {
            let n = u32::try_from(i).unwrap_or(0);
            table.insert(row(id, n));
            map.insert(id.to_owned(), row(id, n));
            // The order cache is refreshed by every insert.
            let ids: Vec<&str> = table.sorted().map(|r| r.id.as_str()).collect();
            let expected: Vec<&str> = map.keys().map(String::as_str).collect();
            assert_eq!(ids, expected);
        }
        let json = serde_json::to_string(&table).expect("encode");
        assert_eq!(json, serde_json::to_string(&map).expect("encode map"));
        let back: Table<Row> = serde_json::from_str(&json).expect("decode");
        assert_eq!(back, table);
        let mut other = Table::default();
        other.insert(row("a", 2));
        assert_ne!(other, table, "different entries are not equal");
        let bad = serde_json::from_str::<Table<Row>>("[1, 2]");
        assert!(bad.is_err(), "a list is not a table");
    }

    // ISSUE-15: a commit in flight forgets only what it took; an entry changed
    // meanwhile stays marked, is not let go of, and keeps its mark where it moves.
    #[test]
    fn a_commit_in_flight_forgets_only_what_it_took() {
        let mut table = Table::default();
        for (i, id) in ["a", "b", "c", "d"].into_iter().enumerate() {
            table.at(u64::try_from(i).unwrap_or(0));
            table.insert(row(id, 0));
        }
        let taken: Vec<&str> = table.changed(false).iter().map(|r| r.id.as_str()).collect();
        assert_eq!(taken, ["a", "b", "c", "d"]);
        // Folded while the commit is written: the oldest entry changes.
        table.at(9);
        if let Some(r) = table.get_mut("a") {
            r.n = 5;
        }
        assert!(
            table.evict(1).is_empty(),
            "nothing leaves while a commit is in flight"
        );
        table.stored();
        // Keep none: all go but "a", changed after the take (the store lacks it).
        let gone: Vec<String> = table.evict(0).into_iter().map(|r| r.id).collect();
        assert_eq!(gone, ["b", "c", "d"]);
        assert_eq!(table.get("a").map(|r| r.n), Some(5));
        let next: Vec<&str> = table.changed(false).iter().map(|r| r.id.as_str()).collect();
        assert_eq!(
            next,
            ["a"],
            "the change made during the commit is the next one's"
        );
        table.stored();
        assert!(table.changed(false).is_empty());
    }
}
