//! The thread view's index rows: how a let-go entry is found from its id.
//!
//! Beside each entry, written once by the commit that first stores it: `P` + the
//! generation of the entry's sequence + the message id, or `T` + generation + thread
//! id -> that sequence (8 bytes, big-endian), the one in the entry's own key. Rows are
//! keyed by generation first so that the rows a commit adds land in the newest
//! generation's pages (`cold_ids.rs` says why and how they are looked up).

use uuid::Uuid;

use crate::cold_ids::{self, generation, row_in, row_parts};
use crate::stored::StoredError;

/// The view, as errors name it.
const VIEW: &str = "thread view";

/// First byte of a thread's row.
pub(super) const THREAD_ROW: u8 = b'T';
/// First byte of a packet's row.
pub(super) const PACKET_ROW: u8 = b'P';

/// The key of the index row of packet `id` created at `sequence`.
pub(super) fn packet_row_key(sequence: u64, id: &Uuid) -> Vec<u8> {
    packet_row_in(generation(sequence), id)
}

/// The key of the index row of thread `id` opened at `sequence`.
pub(super) fn thread_row_key(sequence: u64, id: &str) -> Vec<u8> {
    thread_row_in(generation(sequence), id)
}

/// The key of the index row of packet `id` in `generation`.
pub(super) fn packet_row_in(generation: u64, id: &Uuid) -> Vec<u8> {
    row_in(PACKET_ROW, generation, id.as_bytes())
}

/// The key of the index row of thread `id` in `generation`.
pub(super) fn thread_row_in(generation: u64, id: &str) -> Vec<u8> {
    row_in(THREAD_ROW, generation, id.as_bytes())
}

/// The generation and message id of packet index row `key`.
pub(super) fn packet_row_id(key: &[u8]) -> Result<(u64, Uuid), StoredError> {
    let (g, id) = row_parts(VIEW, key)?;
    let id = Uuid::from_slice(id)
        .map_err(|_| StoredError::entry(VIEW, format!("bad packet row key {key:?}")))?;
    Ok((g, id))
}

/// The generation and thread id of thread index row `key`.
pub(super) fn thread_row_id(key: &[u8]) -> Result<(u64, String), StoredError> {
    let (g, id) = row_parts(VIEW, key)?;
    let id = std::str::from_utf8(id)
        .map_err(|_| StoredError::entry(VIEW, format!("bad thread row key {key:?}")))?;
    Ok((g, id.to_owned()))
}

/// The sequence index row `key` holds (`value`), `None` when the store does not hold
/// the row (an empty value).
pub(super) fn row_sequence(key: &[u8], value: &[u8]) -> Result<Option<u64>, StoredError> {
    cold_ids::row_sequence(VIEW, key, value)
}
