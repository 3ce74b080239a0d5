//! [`Seen`]: which keys the scratch table may hold, answered from memory.
//!
//! Most lookups that reach the scratch table are for keys it has never held: every
//! `cxp.send` checks that its new message id and thread are not known yet, and every
//! new packet or thread checks for a cold copy before it goes into memory. Answered
//! by the table, each was a read transaction and a B-tree descent through pages the
//! cache mostly did not hold — a sixth of the kernel writer's time under load
//! (`docs/performance.md`, "Lookups of new keys answered from memory").
//!
//! A Bloom filter of every key ever spilled says "never held" for nearly all of them
//! without touching the disk; a "maybe" still asks the table, so an answer never
//! depends on the filter. Keys are never removed (a filter cannot forget); a key that
//! came back into memory costs at most a needless lookup. The filter grows in layers,
//! each twice the size of the one before, so it needs no size up front; its memory is
//! ~1.8 bytes per key the layers are sized for — at most ~3.6 per key ever spilled, 1 MB
//! per ~300,000 packets or threads (0.1 % false positives per layer).

use fastbloom::BloomFilter;

/// Keys the first layer is sized for.
const FIRST_LAYER: usize = 1 << 16;

/// False positive rate of one layer.
const FALSE_POSITIVES: f64 = 0.001;

/// The filter; see the module docs.
#[derive(Debug, Default)]
pub struct Seen {
    layers: Vec<BloomFilter>,
    /// Keys the newest layer is sized for, and holds.
    capacity: usize,
    held: usize,
}

impl Seen {
    /// Notes that the table may hold `key` from now on.
    pub fn insert(&mut self, key: &[u8]) {
        if self.held >= self.capacity || self.layers.is_empty() {
            self.capacity = (self.capacity * 2).max(FIRST_LAYER);
            self.held = 0;
            self.layers
                .push(BloomFilter::with_false_pos(FALSE_POSITIVES).expected_items(self.capacity));
        }
        if let Some(layer) = self.layers.last_mut() {
            layer.insert(key);
            self.held += 1;
        }
    }

    /// `false` if the table has certainly never held `key`.
    pub fn may_hold(&self, key: &[u8]) -> bool {
        self.layers.iter().any(|l| l.contains(key))
    }

    /// Bytes of the layers' bit vectors.
    #[cfg(test)]
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
