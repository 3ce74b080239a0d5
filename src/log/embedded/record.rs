//! The layout of one sled value: `[stored_at_ms: i64 BE][key_len: u32 BE][key][value]`.
//! Tree keys are the sequence as a big-endian u64, so sled's byte order is sequence order.

use orchestrata_schemas::events::Stream;

use crate::log::raw::{RawEntry, RawRef};
use crate::log::LogError;

const HEADER: usize = 12;

/// Encodes the sled value of one entry.
pub(super) fn encode_value(stored_at_ms: i64, key: &str, value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + key.len() + value.len());
    out.extend_from_slice(&stored_at_ms.to_be_bytes());
    // Keys are entity ids (thread ids, aliases); far below 4 GiB.
    out.extend_from_slice(&u32::try_from(key.len()).unwrap_or(u32::MAX).to_be_bytes());
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(value);
    out
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

/// Reads the stored time of a value without copying it.
pub(super) fn stored_at(stream: Stream, sequence: u64, raw: &[u8]) -> Result<i64, LogError> {
    let head: [u8; 8] = raw
        .get(..8)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| corrupt(stream, sequence, "value shorter than its header"))?;
    Ok(i64::from_be_bytes(head))
}

/// Splits a stored value into its parts, borrowing the key and the record bytes.
pub(super) fn decode_ref(
    stream: Stream,
    sequence: u64,
    raw: &[u8],
) -> Result<RawRef<'_>, LogError> {
    if raw.len() < HEADER {
        return Err(corrupt(stream, sequence, "value shorter than its header"));
    }
    let stored_at_ms = stored_at(stream, sequence, raw)?;
    let mut len = [0u8; 4];
    len.copy_from_slice(&raw[8..12]);
    let key_len = u32::from_be_bytes(len) as usize;
    let key_end = HEADER
        .checked_add(key_len)
        .filter(|end| *end <= raw.len())
        .ok_or_else(|| corrupt(stream, sequence, "key length runs past the value"))?;
    let key = std::str::from_utf8(&raw[HEADER..key_end])
        .map_err(|_| corrupt(stream, sequence, "key is not UTF-8"))?;
    Ok(RawRef {
        sequence,
        key,
        value: &raw[key_end..],
        stored_at_ms,
    })
}

/// Decodes a stored value into an owned entry.
pub(super) fn decode_entry(
    stream: Stream,
    sequence: u64,
    raw: &[u8],
) -> Result<RawEntry, LogError> {
    let entry = decode_ref(stream, sequence, raw)?;
    Ok(RawEntry {
        sequence,
        key: entry.key.to_owned(),
        value: entry.value.to_vec(),
        stored_at_ms: entry.stored_at_ms,
    })
}

fn corrupt(stream: Stream, sequence: u64, reason: &str) -> LogError {
    LogError::Corrupt {
        stream,
        sequence,
        reason: reason.into(),
    }
}
