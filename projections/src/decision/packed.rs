//! [`Packed`]: every decision's [`Summary`], in log order, in about nine bytes each.
//!
//! The decision index keeps a summary of every decision ever recorded (what searches
//! filter on), so these bytes follow the history: at two decisions per `cxp.send` a
//! `Vec<Summary>` of 40-byte entries (and up to as much again of spare capacity while
//! it doubles) was the largest owner of memory that grew with the log (docs/performance.md,
//! "Decision summaries packed"). Summaries are appended in log order and never change,
//! so all but the newest are frozen into blocks of [`BLOCK`] entries, each encoded as
//! deltas from the entry before it: the sequence (consecutive decisions: one byte), the
//! time (seconds as a signed delta, one byte; the sub-second nanoseconds as a signed
//! delta too, two or three bytes between decisions microseconds apart where the
//! nanoseconds as written took four or five), the interned subject, action and
//! principal (a byte each for a handful of names), result and dry-run flag (one byte).
//! Any `DateTime` and any sequence round-trip exactly.
//!
//! Reading a frozen summary decodes its block (a few microseconds); [`Cursor`] keeps the
//! block it decoded last, so a scan in either direction decodes each block once.

use chrono::{DateTime, Utc};
use orchestrata_schemas::events::types::DecisionResult;

use super::summary::Summary;

/// Summaries per frozen block.
pub const BLOCK: usize = 256;

/// The summaries of all decisions, in log order (increasing sequence); see the module docs.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Packed {
    frozen: Vec<Block>,
    open: Vec<Summary>,
}

/// [`BLOCK`] summaries, delta-encoded.
#[derive(Debug, Clone, PartialEq)]
struct Block {
    first_sequence: u64,
    bytes: Box<[u8]>,
}

impl Packed {
    /// Appends a summary; its sequence must be above every one held.
    pub fn push(&mut self, summary: Summary) {
        self.open.push(summary);
        if self.open.len() == BLOCK {
            let block = Block::encode(&self.open);
            self.frozen.push(block);
            self.open.clear();
        }
    }

    /// How many summaries are held.
    pub fn len(&self) -> usize {
        self.frozen.len() * BLOCK + self.open.len()
    }

    /// The summary at `position` (`None` past the end).
    pub fn get(&self, position: usize) -> Option<Summary> {
        Cursor::new(self).get(position).cloned()
    }

    /// The position of the summary with this sequence (tests check searches by it).
    #[cfg(test)]
    pub fn position(&self, sequence: u64) -> Option<usize> {
        let at = self.partition_point(sequence);
        (self.get(at)?.sequence == sequence).then_some(at)
    }

    /// How many summaries have a sequence below `sequence`.
    pub fn partition_point(&self, sequence: u64) -> usize {
        if self.open.first().is_some_and(|s| s.sequence < sequence) {
            let below = self.open.partition_point(|s| s.sequence < sequence);
            return self.frozen.len() * BLOCK + below;
        }
        // Every open summary is at or past `sequence`: the point is in the last frozen
        // block that starts below it (the blocks before it lie wholly below).
        let blocks = self.frozen.partition_point(|b| b.first_sequence < sequence);
        let Some(last) = blocks.checked_sub(1) else {
            return 0;
        };
        let list = self.frozen[last].decode();
        last * BLOCK + list.partition_point(|s| s.sequence < sequence)
    }

    /// Bytes held by the frozen blocks (for tests and docs).
    #[cfg(test)]
    pub fn frozen_bytes(&self) -> usize {
        self.frozen.iter().map(|b| b.bytes.len()).sum()
    }
}

/// Reads summaries by position, decoding each frozen block once while the positions
/// asked stay in it.
pub(super) struct Cursor<'a> {
    packed: &'a Packed,
    block: Option<(usize, Vec<Summary>)>,
}

impl<'a> Cursor<'a> {
    /// A cursor over `packed`.
    pub fn new(packed: &'a Packed) -> Self {
        Cursor {
            packed,
            block: None,
        }
    }

    /// The summary at `position` (`None` past the end).
    pub fn get(&mut self, position: usize) -> Option<&Summary> {
        let block = position / BLOCK;
        if block >= self.packed.frozen.len() {
            return self
                .packed
                .open
                .get(position - self.packed.frozen.len() * BLOCK);
        }
        if self.block.as_ref().is_none_or(|(b, _)| *b != block) {
            self.block = Some((block, self.packed.frozen[block].decode()));
        }
        self.block
            .as_ref()
            .and_then(|(_, list)| list.get(position % BLOCK))
    }
}

impl Block {
    fn encode(list: &[Summary]) -> Block {
        let first_sequence = list.first().map_or(0, |s| s.sequence);
        let mut bytes = Vec::with_capacity(list.len() * 12);
        let (mut sequence, mut seconds, mut nanos) = (first_sequence, 0i64, 0i64);
        for s in list {
            put(&mut bytes, s.sequence.wrapping_sub(sequence));
            sequence = s.sequence;
            let at = s.at.timestamp();
            put(&mut bytes, zigzag(at.wrapping_sub(seconds)));
            seconds = at;
            let sub = i64::from(s.at.timestamp_subsec_nanos());
            put(&mut bytes, zigzag(sub - nanos));
            nanos = sub;
            put(&mut bytes, u64::from(s.subject));
            put(&mut bytes, u64::from(s.action));
            put(&mut bytes, s.principal.map_or(0, |p| u64::from(p) + 1));
            bytes.push(result_code(s.result) | u8::from(s.dry_run) << 7);
        }
        Block {
            first_sequence,
            bytes: bytes.into_boxed_slice(),
        }
    }

    /// The block's summaries. The bytes are only ever written by [`Block::encode`], so
    /// they decode; a short read ends the list rather than panic.
    fn decode(&self) -> Vec<Summary> {
        let mut out = Vec::with_capacity(BLOCK);
        let mut input = &self.bytes[..];
        let mut at = (self.first_sequence, 0i64, 0i64);
        while !input.is_empty() {
            let Some(summary) = next(&mut input, &mut at) else {
                break;
            };
            out.push(summary);
        }
        out
    }
}

/// The summary at the front of `input`; `at` is the (sequence, seconds, sub-second
/// nanoseconds) of the one before it, and becomes this one's.
fn next(input: &mut &[u8], at: &mut (u64, i64, i64)) -> Option<Summary> {
    let (sequence, seconds, nanos) = at;
    *sequence = sequence.wrapping_add(take(input)?);
    *seconds = seconds.wrapping_add(unzigzag(take(input)?));
    *nanos = nanos.checked_add(unzigzag(take(input)?))?;
    let sub = u32::try_from(*nanos).ok()?;
    let subject = u32::try_from(take(input)?).ok()?;
    let action = u32::try_from(take(input)?).ok()?;
    let principal = match take(input)? {
        0 => None,
        p => Some(u32::try_from(p - 1).ok()?),
    };
    let (&flags, rest) = input.split_first()?;
    *input = rest;
    Some(Summary {
        sequence: *sequence,
        at: DateTime::<Utc>::from_timestamp(*seconds, sub)?,
        subject,
        action,
        principal,
        result: result_of(flags & 0x7f)?,
        dry_run: flags & 0x80 != 0,
    })
}

fn result_code(result: DecisionResult) -> u8 {
    match result {
        DecisionResult::Allow => 0,
        DecisionResult::Deny => 1,
        DecisionResult::Escalate => 2,
    }
}

fn result_of(code: u8) -> Option<DecisionResult> {
    match code {
        0 => Some(DecisionResult::Allow),
        1 => Some(DecisionResult::Deny),
        2 => Some(DecisionResult::Escalate),
        _ => None,
    }
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
