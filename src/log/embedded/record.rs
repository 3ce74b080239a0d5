//! The layout of sled values. Tree keys are a sequence as a big-endian u64, so sled's
//! byte order is sequence order; the value under a key holds the entry at that sequence
//! and, in a block, the ones that follow it.
//!
//! - **Block** (written since blocks were introduced): `[0xB1][count: u32 BE]
//!   [stored_at_ms: i64 BE]` then `count` times `[key_len: u32 BE][key][value_len: u32
//!   BE][value]`, the entries at sequences `key .. key + count`.
//! - **Single entry** (the earlier layout, still read): `[stored_at_ms: i64 BE][key_len:
//!   u32 BE][key][value]`. Its first byte is 0 for any time from 1970 on (for two
//!   million years) and 0xFF before, so it is never taken for a block.
//!
//! Why blocks: sled keeps an entry of its page table for every page it ever wrote, paged
//! out or not, and splits a leaf at 17 keys, so one key per event cost ~13 bytes of
//! memory per event for the life of the log, the largest owner of the heap's growth
//! over history. A block
//! holds the consecutive entries of one append, up to [`BLOCK_ENTRIES`] entries or
//! [`BLOCK_BYTES`] bytes, so a page holds several events per key.

use orchestrata_schemas::events::Stream;

use crate::log::raw::RawRef;
use crate::log::LogError;

/// The first byte of a block.
const BLOCK: u8 = 0xB1;

/// Most entries in one block.
pub(super) const BLOCK_ENTRIES: usize = 64;
/// A block is closed once it holds this many bytes. Sled writes a node whose size
/// passes ~128 KiB as a separate blob file; a leaf holds up to 17 keys, so blocks stay
/// a few KiB.
pub(super) const BLOCK_BYTES: usize = 4096;

/// Encodes one block of `entries` (at least one), all stored at `stored_at_ms`.
pub(super) fn encode_block<'a>(
    stored_at_ms: i64,
    entries: impl ExactSizeIterator<Item = (&'a str, &'a [u8])>,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(BLOCK_BYTES);
    out.push(BLOCK);
    // At most BLOCK_ENTRIES entries; keys and values are far below 4 GiB.
    out.extend_from_slice(
        &u32::try_from(entries.len())
            .unwrap_or(u32::MAX)
            .to_be_bytes(),
    );
    out.extend_from_slice(&stored_at_ms.to_be_bytes());
    for (key, value) in entries {
        out.extend_from_slice(&u32::try_from(key.len()).unwrap_or(u32::MAX).to_be_bytes());
        out.extend_from_slice(key.as_bytes());
        out.extend_from_slice(&u32::try_from(value.len()).unwrap_or(u32::MAX).to_be_bytes());
        out.extend_from_slice(value);
    }
    out
}

/// How `entries` are cut into blocks: the length of each, in order.
pub(super) fn block_sizes(entries: &[(String, Vec<u8>)]) -> Vec<usize> {
    let mut sizes = Vec::new();
    let (mut count, mut bytes) = (0usize, 0usize);
    for (key, value) in entries {
        if count == BLOCK_ENTRIES || (count > 0 && bytes >= BLOCK_BYTES) {
            sizes.push(count);
            (count, bytes) = (0, 0);
        }
        count += 1;
        bytes += 8 + key.len() + value.len();
    }
    if count > 0 {
        sizes.push(count);
    }
    sizes
}

/// Decodes a tree key into a sequence.
pub(super) fn decode_sequence(stream: Stream, key: &[u8]) -> Result<u64, LogError> {
    let bytes: [u8; 8] = key.try_into().map_err(|_| LogError::Corrupt {
        stream,
        sequence: 0,
        reason: format!("tree key has {} bytes, expected 8", key.len()),
    })?;
    Ok(u64::from_be_bytes(bytes))
}

/// The entries of the value stored under sequence `first`, borrowed from it.
pub(super) fn decode_value(
    stream: Stream,
    first: u64,
    raw: &[u8],
) -> Result<Vec<RawRef<'_>>, LogError> {
    if raw.first() != Some(&BLOCK) {
        return decode_single(stream, first, raw).map(|one| vec![one]);
    }
    let mut at = Cursor {
        stream,
        sequence: first,
        raw,
        at: 1,
    };
    let count = at.u32()? as usize;
    let stored_at_ms = i64::from_be_bytes(at.array()?);
    let mut out = Vec::with_capacity(count.min(BLOCK_ENTRIES));
    for i in 0..count {
        at.sequence = first + i as u64;
        let key_len = at.u32()? as usize;
        let key = std::str::from_utf8(at.bytes(key_len)?)
            .map_err(|_| corrupt(stream, at.sequence, "key is not UTF-8"))?;
        let value_len = at.u32()? as usize;
        let value = at.bytes(value_len)?;
        out.push(RawRef {
            sequence: at.sequence,
            key,
            value,
            stored_at_ms,
        });
    }
    if at.at != raw.len() {
        return Err(corrupt(stream, first, "bytes after the block's last entry"));
    }
    Ok(out)
}

/// How many entries the value stored under `first` holds, without decoding them.
pub(super) fn entry_count(stream: Stream, first: u64, raw: &[u8]) -> Result<u64, LogError> {
    if raw.first() != Some(&BLOCK) {
        return Ok(1);
    }
    let mut at = Cursor {
        stream,
        sequence: first,
        raw,
        at: 1,
    };
    let count = at.u32()?;
    at.bytes(8)?; // the stored time
    if count == 0 {
        return Err(corrupt(stream, first, "empty block"));
    }
    Ok(u64::from(count))
}

/// The earlier layout: one entry per value.
fn decode_single(stream: Stream, sequence: u64, raw: &[u8]) -> Result<RawRef<'_>, LogError> {
    let mut at = Cursor {
        stream,
        sequence,
        raw,
        at: 0,
    };
    let stored_at_ms = i64::from_be_bytes(at.array()?);
    let key_len = at.u32()? as usize;
    let key = std::str::from_utf8(at.bytes(key_len)?)
        .map_err(|_| corrupt(stream, sequence, "key is not UTF-8"))?;
    Ok(RawRef {
        sequence,
        key,
        value: &raw[at.at..],
        stored_at_ms,
    })
}

/// Reads a stored value front to back; every read past its end is `Corrupt`.
struct Cursor<'a> {
    stream: Stream,
    sequence: u64,
    raw: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn bytes(&mut self, n: usize) -> Result<&'a [u8], LogError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|end| *end <= self.raw.len())
            .ok_or_else(|| corrupt(self.stream, self.sequence, "entry runs past the value"))?;
        let out = &self.raw[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], LogError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.bytes(N)?);
        Ok(out)
    }

    fn u32(&mut self) -> Result<u32, LogError> {
        Ok(u32::from_be_bytes(self.array()?))
    }
}

fn corrupt(stream: Stream, sequence: u64, reason: &str) -> LogError {
    LogError::Corrupt {
        stream,
        sequence,
        reason: reason.into(),
    }
}

#[cfg(test)]
#[path = "record_tests.rs"]
mod tests;
