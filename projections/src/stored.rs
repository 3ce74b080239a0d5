//! How a view reaches its store: a small head and keyed entries, written as they change.
//!
//! A view that grows with the log (every packet, every decision) cannot be encoded whole
//! at each commit: the cost of a commit would follow the history, not the work. Such a
//! view splits its state into a **head** (its checkpoint and whatever is small) and
//! **entries** under keys of its own choosing (a thread, a packet, a decision), and
//! remembers which entries changed since the last commit. [`View::take_changes`] hands
//! the store the head and the changed entries; [`View::from_stored`] rebuilds the view
//! from a head and every entry. Indexes derived from the entries (by sender, by
//! sequence, ...) are not stored: they are rebuilt on load, so a view restored from the
//! store serializes byte for byte like the view folded from the log.
//!
//! Views that stay small (sessions, Volks, workflows, the bounded graph) keep the
//! default: the head is the whole view and there are no entries.
//!
//! Everything here is encoding and bookkeeping; no I/O. Values are MessagePack in
//! serde's compact form, the view store's encoding.
//!
//! [`View::take_changes`]: crate::View::take_changes
//! [`View::from_stored`]: crate::View::from_stored

use serde::de::DeserializeOwned;
use serde::Serialize;

/// One entry as a view hands it to its store: its key within the view and its encoded
/// value, or `None` when the entry was removed.
pub type EntryChange = (Vec<u8>, Option<Vec<u8>>);

/// One entry as the store reads it back: its key within the view and its value.
pub type StoredEntry = (Vec<u8>, Vec<u8>);

/// What a commit writes for one view.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    /// The head: the view's state that is not in entries, its checkpoint included.
    pub head: Vec<u8>,
    /// Entries written or removed since the last commit (or every entry, for a full one).
    pub entries: Vec<EntryChange>,
    /// Set when the view hands out every entry although asked for changes only (it
    /// stopped tracking them: see [`Touched`]); the store must then replace the view.
    pub full: bool,
    /// How many of the last `entries` the store does not hold yet: entries created
    /// since the view's last confirmed commit ([`View::committed`](crate::View::committed)),
    /// which the store writes without first reading what it holds under their keys
    /// (a B-tree look-up per entry, four per `cxp.send` in the thread view alone).
    /// 0 when the view does not know; never more than it knows.
    pub fresh: usize,
}

impl Changes {
    /// The changes a view tracked itself: `head` and `entries`, not a full commit.
    pub fn tracked(head: Vec<u8>, entries: Vec<EntryChange>) -> Self {
        Changes {
            head,
            entries,
            full: false,
            fresh: 0,
        }
    }

    /// Whether the store holds no entry under the key of `entries[index]` (one of the
    /// last [`fresh`](Changes::fresh)).
    pub fn is_fresh(&self, index: usize) -> bool {
        index >= self.entries.len().saturating_sub(self.fresh)
    }
}

/// A view's stored form could not be written or read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoredError {
    /// Encoding failed (a value serde cannot encode as MessagePack).
    #[error("encoding {what}: {reason}")]
    Encode {
        /// What was being encoded.
        what: String,
        /// The encoder's message.
        reason: String,
    },
    /// A stored head or entry is not what this version wrote.
    #[error("decoding {what}: {reason}")]
    Decode {
        /// What was being decoded.
        what: String,
        /// The decoder's message.
        reason: String,
    },
}

impl StoredError {
    /// A stored entry of view `view` that this version cannot place.
    pub fn entry(view: &str, reason: impl Into<String>) -> Self {
        StoredError::Decode {
            what: format!("{view} entry"),
            reason: reason.into(),
        }
    }
}

/// Encodes `value` (MessagePack, compact).
pub fn encode<T: Serialize + ?Sized>(what: &str, value: &T) -> Result<Vec<u8>, StoredError> {
    rmp_serde::to_vec(value).map_err(|e| StoredError::Encode {
        what: what.to_owned(),
        reason: e.to_string(),
    })
}

/// Decodes what [`encode`] wrote.
pub fn decode<T: DeserializeOwned>(what: &str, bytes: &[u8]) -> Result<T, StoredError> {
    rmp_serde::from_slice(bytes).map_err(|e| StoredError::Decode {
        what: what.to_owned(),
        reason: e.to_string(),
    })
}

/// An entry key: a one-byte kind (which table of the view) and the key's bytes.
pub fn key(kind: u8, bytes: &[u8]) -> Vec<u8> {
    let mut key = Vec::with_capacity(1 + bytes.len());
    key.push(kind);
    key.extend_from_slice(bytes);
    key
}

/// How many entries may wait for a commit in a view whose commit writes what arrived
/// since the last one (threads and packets, decisions, the packet index) before it
/// asks for a commit at once ([`View::needs_commit`](crate::View::needs_commit)).
///
/// A runner spaces a view's commits by twenty times the last one's cost, which keeps
/// commits under 5 % of the time when their cost is fixed. When the cost follows the
/// entries written, the spacing feeds back on itself: a commit of twice the entries
/// costs twice as much and is followed by twice the wait, whenever the cost of writing
/// an entry × entries per second × 20 exceeds 1 — as it does for the thread view under
/// sustained sends, whose commits would then grow until none is taken for minutes
/// while the waiting entries pile up in memory. Past this
/// many waiting entries the view asks, so a commit writes at most about this many:
/// its cost stays flat, and so does the memory the waiting entries hold.
pub const PRESSING_ENTRIES: usize = 16_384;

/// Commit bookkeeping a view keeps beside its value (how much of an append-only list
/// the store has; how many entries it was last asked to keep in memory). Not part of
/// the view's value: always equal, never serialized.
#[derive(Debug, Clone, Copy, Default)]
pub struct Saved(pub usize);

impl PartialEq for Saved {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// Positions of entries changed since the last commit, pushed as they are touched.
///
/// Duplicates are allowed (a packet touched by three events is pushed three times);
/// [`Dirty::take`] sorts them out. So that a view folded for a long time without a
/// commit does not grow the list without bound, it is compacted when it outgrows twice
/// the number of entries it can name.
#[derive(Debug, Clone, Default)]
pub struct Dirty(Vec<u32>);

impl Dirty {
    /// Marks position `at` (of a table of `len` entries) changed.
    pub fn mark(&mut self, at: u32, len: usize) {
        self.0.push(at);
        if self.0.len() > 2 * len + 1024 {
            self.compact();
        }
    }

    fn compact(&mut self) {
        self.0.sort_unstable();
        self.0.dedup();
    }

    /// The changed positions, each once, ascending; none are left marked.
    pub fn take(&mut self) -> Vec<u32> {
        self.compact();
        std::mem::take(&mut self.0)
    }

    /// The changed positions, each once, ascending; they stay marked (for a view
    /// that forgets its changes only once the store confirmed them).
    pub fn peek(&mut self) -> Vec<u32> {
        self.compact();
        self.0.clone()
    }

    /// Whether nothing is marked.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Forgets every mark (after a full commit, or a restore).
    pub fn clear(&mut self) {
        self.0.clear();
    }
}

/// Keys of entries changed (or removed) since the last commit.
///
/// A view folded for long without a commit (a rebuild, stored once at its end) would
/// keep every key it ever removed; past a bound the set is dropped and the view
/// remembers only that it lost track, so its next commit is a full one.
#[derive(Debug, Clone, Default)]
pub struct Touched {
    /// Hashed, not ordered: a view marks on every event, mostly keys already marked
    /// (the Volks of every packet), and a tree of long ids with shared prefixes
    /// (`packet:…`, `SENT_BY:packet:…`) paid a dozen string compares per mark — 4 % of
    /// a server's CPU under pipelined sends. Ordered once, at [`take`](Touched::take).
    keys: hashbrown::HashSet<String, foldhash::fast::RandomState>,
    lost: bool,
}

impl Touched {
    /// Marks `key` changed; `live` is how many entries the view holds (the bound is
    /// eight times that, plus some slack: a view whose items churn through a bounded
    /// window touches several times its size between two commits).
    pub fn mark(&mut self, key: &str, live: usize) {
        if self.lost {
            return;
        }
        if !self.keys.contains(key) {
            self.keys.insert(key.to_owned());
        }
        if self.keys.len() > 8 * live + 16_384 {
            self.keys.clear();
            self.lost = true;
        }
    }

    /// Records that `key` left the view: marked when the store holds it (`stored`), so
    /// the next commit removes it there; forgotten when the store never held it — an
    /// entry added and let go of between two commits (a windowed view's churn) leaves
    /// nothing to write, and must not count towards [`pressing`](Touched::pressing).
    pub fn removed(&mut self, key: &str, stored: bool, live: usize) {
        if stored {
            self.mark(key, live);
        } else if !self.lost {
            self.keys.remove(key);
        }
    }

    /// Whether the marked keys are half way to the bound past which track is lost: a
    /// runner should commit now rather than let the next commit write the whole view
    /// ([`View::needs_commit`](crate::View::needs_commit)).
    pub fn pressing(&self, live: usize) -> bool {
        self.lost || self.keys.len() > 4 * live + 8192
    }

    /// The keys marked, and whether track was lost (then every entry must be written);
    /// nothing stays marked.
    pub fn take(&mut self) -> (std::collections::BTreeSet<String>, bool) {
        let lost = std::mem::take(&mut self.lost);
        (std::mem::take(&mut self.keys).into_iter().collect(), lost)
    }
}

impl PartialEq for Touched {
    /// Bookkeeping, not value: always equal.
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl PartialEq for Dirty {
    /// Bookkeeping, not value: always equal.
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests;
