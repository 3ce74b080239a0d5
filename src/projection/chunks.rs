//! Content-defined chunking of a stored view's bytes, so a commit writes only the
//! chunks that changed.
//!
//! A view is encoded whole (MessagePack), then cut where the content says, not at fixed
//! offsets: a boundary falls after a byte where a gear hash of the preceding 64 bytes
//! has its top 11 bits zero (about one position in 2,048), never before [`MIN`] bytes
//! and never after [`MAX`]. Inserting or changing a few bytes (a packet added to one
//! thread) moves at most the boundaries next to the change; every other chunk keeps
//! its bytes, hence its hash, and is not written again. The table and the rule are
//! fixed, so the same bytes cut the same way in every process and version.

use std::ops::Range;

use sha2::{Digest, Sha256};

/// No chunk is shorter than this (but the last).
pub const MIN: usize = 1024;
/// No chunk is longer than this: what the store writes stays within one part
/// (see [`PART_BYTES`](super::store::PART_BYTES)).
pub const MAX: usize = 4096;

/// A chunk's name: the first 16 bytes of its SHA-256.
pub type ChunkId = [u8; 16];

/// 256 fixed pseudo-random words (splitmix64 from seed 0).
const GEAR: [u64; 256] = gear_table();

const fn gear_table() -> [u64; 256] {
    let mut table = [0u64; 256];
    let mut state: u64 = 0;
    let mut i = 0;
    while i < 256 {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        table[i] = z ^ (z >> 31);
        i += 1;
    }
    table
}

/// Cuts `data` into consecutive ranges that cover it, each of `MIN..=MAX` bytes but
/// the last (which may be shorter).
pub fn cut(data: &[u8]) -> Vec<Range<usize>> {
    let mut ranges = Vec::with_capacity(data.len() / 2048 + 1);
    let mut start = 0;
    while start < data.len() {
        let end = start + boundary(&data[start..]);
        ranges.push(start..end);
        start = end;
    }
    ranges
}

/// Length of the chunk that starts `data`.
fn boundary(data: &[u8]) -> usize {
    if data.len() <= MIN {
        return data.len();
    }
    let limit = data.len().min(MAX);
    let mut hash = 0u64;
    // The hash covers the 64 bytes before each position; start it 64 bytes before MIN
    // so the first boundary candidate already depends on content only.
    for (i, byte) in data.iter().enumerate().take(limit).skip(MIN - 64) {
        hash = (hash << 1).wrapping_add(GEAR[usize::from(*byte)]);
        if i + 1 >= MIN && hash >> 53 == 0 {
            return i + 1;
        }
    }
    limit
}

/// The name of `chunk`.
pub fn id(chunk: &[u8]) -> ChunkId {
    let digest = Sha256::digest(chunk);
    let mut id = [0u8; 16];
    id.copy_from_slice(&digest[..16]);
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pseudo_random(n: usize, seed: u64) -> Vec<u8> {
        let mut state = seed;
        (0..n)
            .map(|_| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                (state >> 56) as u8
            })
            .collect()
    }

    #[test]
    fn chunks_cover_the_data_within_their_bounds() {
        for data in [
            Vec::new(),
            vec![7u8; 10],
            vec![0u8; 100_000],
            pseudo_random(300_000, 1),
        ] {
            let ranges = cut(&data);
            let mut next = 0;
            for (i, range) in ranges.iter().enumerate() {
                assert_eq!(range.start, next);
                assert!(range.len() <= MAX);
                assert!(range.len() >= MIN || i + 1 == ranges.len());
                next = range.end;
            }
            assert_eq!(next, data.len());
        }
    }

    #[test]
    fn an_insertion_changes_only_the_chunks_around_it() {
        let data = pseudo_random(400_000, 2);
        let mut edited = data.clone();
        edited.splice(200_000..200_000, pseudo_random(50, 3));
        let ids = |d: &[u8]| -> std::collections::HashSet<ChunkId> {
            cut(d).into_iter().map(|r| id(&d[r])).collect()
        };
        let (before, after) = (ids(&data), ids(&edited));
        let new = after.difference(&before).count();
        assert!(before.len() > 100, "{} chunks", before.len());
        assert!(new <= 5, "{new} of {} chunks changed", after.len());
    }
}
