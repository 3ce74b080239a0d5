//! [`Seen`]: which keys a store may hold, answered from memory.
//!
//! Most lookups of let-go entries are for keys never let go of: the kernel's spill
//! table is asked whether each `cxp.send`'s new message id and thread are known
//! (answered by the table, each would be a read transaction and a B-tree descent
//! through pages the cache mostly does not hold, on the kernel writer's path), and the
//! thread view is asked whether each event's thread and packet were let go of.
//!
//! A Bloom filter of every key ever let go of says "never held" for nearly all of them
//! without touching the disk; a "maybe" still asks the store, so an answer never
//! depends on the filter. Keys are never removed (a filter cannot forget); a key that
//! came back into memory costs at most a needless lookup. The filter grows in layers,
//! each twice the size of the one before, so it needs no size up front; its memory is
//! ~1.8 bytes per key the layers are sized for — at most ~3.6 per key ever spilled, 1 MB
//! per ~300,000 packets or threads (0.1 % false positives per layer).

use fastbloom::{BloomFilter, DefaultHasher};

/// Keys the first layer is sized for.
const FIRST_LAYER: usize = 1 << 16;

/// False positive rate of one layer.
const FALSE_POSITIVES: f64 = 0.001;

/// The filter; see the module docs.
#[derive(Debug, Clone, Default)]
pub struct Seen {
    layers: Vec<BloomFilter>,
    /// One hasher (randomly keyed) for every layer, so a key is hashed once however
    /// many layers it is looked up in: each layer keyed by itself hashed the key again,
    /// 28 ns for a miss in one layer but 175 in five after a million keys
    /// (`benches/seen.rs`).
    hasher: DefaultHasher,
    /// Keys the newest layer is sized for, and holds.
    capacity: usize,
    held: usize,
    /// Keys the first layer is sized for; 0 for [`FIRST_LAYER`].
    first: usize,
    /// Keys inserted, in all layers.
    keys: usize,
}

impl Seen {
    /// A filter whose first layer is sized for `keys` keys: for filters that hold few
    /// keys each (one per generation of rows), where a first layer of 65,536 would
    /// cost more than the keys.
    pub fn starting_at(keys: usize) -> Self {
        Seen {
            first: keys.max(1),
            ..Seen::default()
        }
    }

    /// Notes that the store may hold `key` from now on.
    pub fn insert(&mut self, key: &[u8]) {
        if self.held >= self.capacity || self.layers.is_empty() {
            let first = if self.first == 0 {
                FIRST_LAYER
            } else {
                self.first
            };
            self.capacity = (self.capacity * 2).max(first);
            self.held = 0;
            self.layers.push(
                BloomFilter::with_false_pos(FALSE_POSITIVES)
                    .hasher(self.hasher.clone())
                    .expected_items(self.capacity),
            );
        }
        if let Some(layer) = self.layers.last_mut() {
            layer.insert(key);
            self.held += 1;
            self.keys += 1;
        }
    }

    /// How many keys were inserted (a key inserted twice counts twice).
    pub fn len(&self) -> usize {
        self.keys
    }

    /// Whether no key was inserted.
    pub fn is_empty(&self) -> bool {
        self.keys == 0
    }

    /// `false` if the store has certainly never held `key`.
    pub fn may_hold(&self, key: &[u8]) -> bool {
        let Some(first) = self.layers.first() else {
            return false;
        };
        let hash = first.source_hash(key);
        self.layers.iter().any(|l| l.contains_hash(hash))
    }

    /// How many layers the filter has grown.
    #[cfg(test)]
    pub fn layer_count(&self) -> usize {
        self.layers.len()
    }

    /// Bytes of the layers' bit vectors: what the filter holds in memory.
    pub fn bytes(&self) -> usize {
        self.layers.iter().map(|l| l.num_bits() / 8).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_inserted_is_always_maybe_held_across_layers() {
        let mut seen = Seen::default();
        let keys: Vec<[u8; 16]> = (0..200_000u128).map(|i| i.to_le_bytes()).collect();
        for k in &keys {
            seen.insert(k);
        }
        assert!(keys.iter().all(|k| seen.may_hold(k)), "no false negatives");
        // 65,536 + 131,072 + a third layer: three filters.
        assert_eq!(seen.layers.len(), 3);
        let misses = (1_000_000u128..1_100_000)
            .filter(|i| seen.may_hold(&i.to_le_bytes()))
            .count();
        assert!(
            misses < 1_000,
            "{misses} false positives in 100,000 (three layers at 0.1 %)"
        );
        let sized_for = 65_536 + 131_072 + 262_144;
        assert!(seen.bytes() <= 2 * sized_for, "{} bytes", seen.bytes());
    }

    #[test]
    fn an_empty_filter_holds_nothing() {
        let seen = Seen::default();
        assert!(!seen.may_hold(b"anything"));
        assert_eq!(seen.bytes(), 0);
    }
}
