//! [`LetGoKeys`]: which keys a store may hold because memory let them go, answered
//! from memory in a few bytes a key — none for the keys the server stamps.
//!
//! Lookups of let-go entries are mostly for keys never let go of: each new message id
//! and thread is looked for in the views' and the kernel's stores before it is
//! created. A Bloom filter ([`Seen`]) of every key let go of answers "never" for them
//! without a read, at a few bytes a key for the server's life: memory that follows the
//! history, which the stamped keys below avoid.
//!
//! The ids the server makes (command ids, the message ids of `cxp.send`, the threads the
//! kernel names) are UUID v7, which carry their time. A key let go of whose v7 time is
//! not past the newest event time the owner folded (the server's clock, [`tick`]) plus
//! [`STAMP_SLACK_MS`] is **stamped**: memory keeps only the newest stamped time let go
//! of, and a stamped key newer than it was never let go of. Other keys (made up by a
//! client, or stamped further ahead) go to the Bloom filter. An answer never depends on
//! the stamps more than on the filter: "maybe" still costs a read of the store, and
//! "never" is only said of keys that cannot have been let go of.
//!
//! [`tick`]: LetGoKeys::tick

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::seen::Seen;

/// How far (ms) past the newest event time folded a let-go key's v7 time may lie and
/// still count as stamped. Ids are made before their event is stamped, by another
/// clock when a gateway runs apart from the writer; a key stamped further ahead goes to
/// the filter, so no key can hold the "never let go" answer back for more than this
/// past the server's clock.
pub const STAMP_SLACK_MS: u64 = 60_000;

/// The keys let go of; see the module docs.
#[derive(Debug, Clone, Default)]
pub struct LetGoKeys {
    /// Keys let go of that are not stamped.
    seen: Seen,
    /// The newest time (ms) of a stamped key let go of.
    stamped_through: Option<u64>,
    /// The newest event time (ms) folded: how far stamps are believed.
    clock: Option<u64>,
}

impl LetGoKeys {
    /// The owner folded an event stamped `at` (the server's clock, never an id's).
    pub fn tick(&mut self, at: DateTime<Utc>) {
        let ms = u64::try_from(at.timestamp_millis()).unwrap_or(0);
        self.clock = Some(self.clock.map_or(ms, |c| c.max(ms)));
    }

    /// `key`'s v7 stamp (ms) if the server is believed to have made it: a UUID v7 whose
    /// time is not past the newest event time folded plus [`STAMP_SLACK_MS`].
    pub fn believed_stamp(&self, key: &[u8]) -> Option<u64> {
        let believed = self.clock?.saturating_add(STAMP_SLACK_MS);
        stamp(key).filter(|at| *at <= believed)
    }

    /// Notes that the store may hold `key` from now on.
    pub fn insert(&mut self, key: &[u8]) {
        match self.believed_stamp(key) {
            Some(at) => {
                self.stamped_through = Some(self.stamped_through.map_or(at, |t| t.max(at)));
            }
            None => self.seen.insert(key),
        }
    }

    /// `false` if the store has certainly never held `key`.
    pub fn may_hold(&self, key: &[u8]) -> bool {
        self.may_hold_stamped(key, stamp(key))
    }

    /// [`may_hold`](Self::may_hold) for a caller that already read `key`'s v7 stamp
    /// ([`stamp`]), so a lookup parses a key's text once.
    pub(crate) fn may_hold_stamped(&self, key: &[u8], stamp: Option<u64>) -> bool {
        let stamped = stamp
            .zip(self.stamped_through)
            .is_some_and(|(at, through)| at <= through);
        stamped || self.seen.may_hold(key)
    }

    /// Bytes of the Bloom filter's bit vectors (the keys that are not stamped).
    pub fn filter_bytes(&self) -> usize {
        self.seen.bytes()
    }

    /// The newest time (ms) of a stamped key let go of.
    #[cfg(test)]
    pub(crate) fn stamped_through(&self) -> Option<u64> {
        self.stamped_through
    }
}

/// The time (ms since the epoch) a UUID v7 carries, given as its 16 bytes or its
/// 36-character text; `None` for any other key.
pub(crate) fn stamp(key: &[u8]) -> Option<u64> {
    let uuid = match key.len() {
        16 => Uuid::from_slice(key).ok()?,
        36 => Uuid::try_parse_ascii(key).ok()?,
        _ => return None,
    };
    if uuid.get_version_num() != 7 || uuid.get_variant() != uuid::Variant::RFC4122 {
        return None;
    }
    // Its first 48 bits, big-endian.
    let b = uuid.as_bytes();
    Some(u64::from_be_bytes([
        0, 0, b[0], b[1], b[2], b[3], b[4], b[5],
    ]))
}
