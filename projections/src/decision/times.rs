//! [`Times`]: every decision's event time, for searches by time, in memory only where
//! searches are likely to read them.
//!
//! Searches filter decisions by subject, action, principal, result and dry run through
//! bitmaps of positions (`decision/search.rs`); time is the one filter a bitmap cannot
//! answer. Times are appended in log order and never change, so all but the newest are
//! frozen into blocks of [`BLOCK`], each encoded as deltas from the time before it (the
//! seconds and the sub-second nanoseconds as signed deltas: three or four bytes between
//! decisions microseconds apart). Of a frozen block, memory keeps its earliest and
//! latest time; its bytes stay in memory while the block is among the newest or not yet
//! stored, and are otherwise read back from the view store under [`block_key`] when a
//! search's time bound falls inside the block ([`Verdict::Mixed`]). A block wholly
//! inside or outside a search's bounds is decided by its earliest and latest time alone:
//! with times that follow the log (one writer's clock), only the blocks at the two
//! bounds are read. A summary kept in memory for every decision would make memory
//! follow the history.

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use crate::stored::{self, StoredError};

/// Times per frozen block.
pub const BLOCK: usize = 256;

/// The first byte of a frozen block's key in the view store.
pub(super) const TIMES: u8 = b't';

/// Every decision's time, in log order; see the module docs.
#[derive(Debug, Clone, Default)]
pub(super) struct Times {
    frozen: Vec<Frozen>,
    open: Vec<DateTime<Utc>>,
}

/// [`BLOCK`] times, delta-encoded, with their bounds.
#[derive(Debug, Clone)]
struct Frozen {
    earliest: DateTime<Utc>,
    latest: DateTime<Utc>,
    /// `None` once the block is stored and old enough to be let go of.
    bytes: Option<Box<[u8]>>,
}

/// What a search's time bounds make of one frozen block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Every time in the block is within the bounds.
    All,
    /// None is.
    Nothing,
    /// Some may be: the block's times must be read.
    Mixed,
}

/// Frozen blocks read back from the view store for one search (decoded once, asked for
/// by [`NeedsStored`]). Blocks never change once frozen, so what was read stays true
/// while the view folds on.
#[derive(Debug, Default)]
pub struct StoredTimes {
    blocks: HashMap<usize, Vec<DateTime<Utc>>>,
}

/// A search needs these entries of the view store (frozen blocks of times whose bytes
/// the index let go of): read them, hand them to [`StoredTimes::add`], and search again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NeedsStored {
    /// The keys to read.
    pub keys: Vec<Vec<u8>>,
}

/// The store key of frozen block `block` (`t` + its number, big-endian: blocks load in
/// order).
pub fn block_key(block: usize) -> Vec<u8> {
    stored::key(TIMES, &(block as u64).to_be_bytes())
}

/// The block number a key of [`block_key`] names.
pub(super) fn block_of(key: &[u8]) -> Option<usize> {
    let bytes: [u8; 8] = key.get(1..)?.try_into().ok()?;
    usize::try_from(u64::from_be_bytes(bytes)).ok()
}

impl StoredTimes {
    /// Adds a block read from the store: `key` as [`NeedsStored`] named it, `bytes` its
    /// value. Fails on a key that names no block or bytes that are not one.
    pub fn add(&mut self, key: &[u8], bytes: &[u8]) -> Result<(), StoredError> {
        let bad = |reason: String| StoredError::entry("decision index", reason);
        let block = block_of(key)
            .filter(|_| key.first() == Some(&TIMES))
            .ok_or_else(|| bad(format!("{key:?} is not a block of times")))?;
        let times = decode(bytes);
        if times.len() != BLOCK {
            return Err(bad(format!(
                "block {block} of times holds {} times, not {BLOCK}",
                times.len()
            )));
        }
        self.blocks.insert(block, times);
        Ok(())
    }
}

impl Times {
    /// Appends a time (the newest decision's).
    pub fn push(&mut self, at: DateTime<Utc>) {
        self.open.push(at);
        if self.open.len() == BLOCK {
            let earliest = self.open.iter().min().copied().unwrap_or(at);
            let latest = self.open.iter().max().copied().unwrap_or(at);
            self.frozen.push(Frozen {
                earliest,
                latest,
                bytes: Some(encode(&self.open).into_boxed_slice()),
            });
            self.open.clear();
        }
    }

    /// How many times are held.
    pub fn len(&self) -> usize {
        self.frozen.len() * BLOCK + self.open.len()
    }

    /// How many blocks are frozen.
    pub fn frozen(&self) -> usize {
        self.frozen.len()
    }

    /// The encoded bytes of frozen block `block`, while memory holds them (a commit
    /// stores them under [`block_key`]).
    pub fn encoded(&self, block: usize) -> Option<&[u8]> {
        self.frozen.get(block)?.bytes.as_deref()
    }

    /// Lets go of the bytes of the frozen blocks before `block`.
    pub fn let_go_before(&mut self, block: usize) {
        for frozen in self.frozen.iter_mut().take(block) {
            frozen.bytes = None;
        }
    }

    /// What `from` (inclusive) and `until` (exclusive) make of frozen block `block`;
    /// [`Verdict::Mixed`] for the open block, whose times are always in memory.
    pub fn verdict(
        &self,
        block: usize,
        from: Option<DateTime<Utc>>,
        until: Option<DateTime<Utc>>,
    ) -> Verdict {
        let Some(b) = self.frozen.get(block) else {
            return Verdict::Mixed;
        };
        if from.is_some_and(|f| b.latest < f) || until.is_some_and(|u| b.earliest >= u) {
            Verdict::Nothing
        } else if from.is_none_or(|f| b.earliest >= f) && until.is_none_or(|u| b.latest < u) {
            Verdict::All
        } else {
            Verdict::Mixed
        }
    }

    /// The times of block `block` (frozen or the open one): from memory, from `stored`,
    /// or `None` when only the store has them.
    pub fn block(&self, block: usize, stored: &StoredTimes) -> Option<Vec<DateTime<Utc>>> {
        match self.frozen.get(block) {
            None if block == self.frozen.len() => Some(self.open.clone()),
            None => Some(Vec::new()),
            Some(Frozen {
                bytes: Some(bytes), ..
            }) => Some(decode(bytes)),
            Some(_) => stored.blocks.get(&block).cloned(),
        }
    }
}

/// Equal by the times they hold as far as memory knows them: the bounds of every
/// frozen block and the open times. Whether a block's bytes are in memory or only in
/// the store (a live runner's view against one folded whole) does not count; the
/// bytes themselves are compared through the store.
impl PartialEq for Times {
    fn eq(&self, other: &Self) -> bool {
        self.open == other.open
            && self.frozen.len() == other.frozen.len()
            && self
                .frozen
                .iter()
                .zip(&other.frozen)
                .all(|(a, b)| (a.earliest, a.latest) == (b.earliest, b.latest))
    }
}

fn encode(times: &[DateTime<Utc>]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(times.len() * 4);
    let (mut seconds, mut nanos) = (0i64, 0i64);
    for at in times {
        let s = at.timestamp();
        put(&mut bytes, zigzag(s.wrapping_sub(seconds)));
        seconds = s;
        let sub = i64::from(at.timestamp_subsec_nanos());
        put(&mut bytes, zigzag(sub - nanos));
        nanos = sub;
    }
    bytes
}

/// The times `bytes` encode; a short or malformed read ends the list rather than panic
/// (a block read from the store is checked for its length by [`StoredTimes::add`]).
fn decode(mut bytes: &[u8]) -> Vec<DateTime<Utc>> {
    let mut out = Vec::with_capacity(BLOCK);
    let (mut seconds, mut nanos) = (0i64, 0i64);
    while !bytes.is_empty() {
        let Some(at) = next(&mut bytes, &mut seconds, &mut nanos) else {
            break;
        };
        out.push(at);
    }
    out
}

fn next(input: &mut &[u8], seconds: &mut i64, nanos: &mut i64) -> Option<DateTime<Utc>> {
    *seconds = seconds.wrapping_add(unzigzag(take(input)?));
    *nanos = nanos.checked_add(unzigzag(take(input)?))?;
    DateTime::<Utc>::from_timestamp(*seconds, u32::try_from(*nanos).ok()?)
}

/// LEB128: seven bits a byte, low first.
fn put(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn take(input: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for (i, &byte) in input.iter().enumerate().take(10) {
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            *input = &input[i + 1..];
            return Some(value);
        }
    }
    None
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

#[cfg(test)]
mod tests;
