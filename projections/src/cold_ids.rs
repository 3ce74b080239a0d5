//! Which entries of a view are let go of, and where they are stored, in a few bytes
//! an entry: the thread view's packets and threads, the packet index's packets.
//!
//! Entries are stored under the sequence of the event that created them (keys that
//! follow the log; `thread/stored.rs`), so finding a let-go entry by its id needs its
//! sequence. Keeping id -> sequence in memory would cost tens of bytes a `cxp.send`
//! across the two views for as long as the server runs: memory that follows the
//! history. Instead a commit
//! stores beside each new entry an **index row** (id -> sequence), and memory keeps
//! Bloom filters ([`Seen`]) and a count:
//!
//! - `seen`, of the ids let go of ([`LetGoKeys`]): an id it has never seen was never
//!   let go of ([`Place::Nowhere`]) — the answer for nearly every new packet and
//!   thread; the ids the server stamps (UUID v7) take no bits in it;
//! - one per **generation** of rows ([`Generation`]: the span of the stamped ids' times,
//!   a Bloom filter of the others): a row's key starts with the generation of the
//!   entry's sequence (2^16 events of `cxp.traffic` each), so the rows a commit adds
//!   land in the B-tree pages of the newest generation only. Keyed by id alone they
//!   would land on a random page each — a commit rewriting one page per new entry, its
//!   cost growing with the history. The filters say which generation
//!   to read ([`Place::Row`]), newest first.
//!
//! What a row says is kept here until the entry itself is read ([`Place::Stored`]);
//! a row not stored (a filter's false positive) rules its generation out for that id.
//! So an answer never depends on the filters: a "maybe" costs a read. What rows said
//! is forgotten at the next let-go (after a commit): it is needed only between the
//! rounds of reads before a chunk of events.

use std::borrow::Borrow;
use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;

use chrono::{DateTime, Utc};
use orchestrata_schemas::events::Stream;

use crate::let_go::{stamp, LetGoKeys};
#[cfg(test)]
use crate::seen::Seen;
use crate::stored::StoredError;
use crate::Checkpoint;
use generation::Generation;

/// Where a let-go entry is, as far as memory knows; see the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// Not let go of (in memory, or unknown to the view).
    Nowhere,
    /// Perhaps let go of: read its index row in this generation to know.
    Row(u64),
    /// Let go of; stored under the entry key of this sequence.
    Stored(u64),
}

/// The let-go ids of one table (packets or threads); see the module docs.
#[derive(Debug, Clone)]
pub(crate) struct ColdIds<K> {
    /// Ids let go of.
    seen: LetGoKeys,
    /// How many entries are let go of now.
    count: usize,
    /// Generation -> ids with an index row in it.
    generations: BTreeMap<u64, Generation>,
    /// Index rows read back: id -> sequence of its entry key.
    found: HashMap<K, u64>,
    /// Generations whose row of the id is not stored.
    ruled_out: HashMap<K, Vec<u64>>,
}

/// Bits of a sequence below its generation.
const GENERATION_BITS: u32 = 16;

/// Ids the first generation's filter is first sized for (it doubles as they come).
/// Each later generation's first layer is sized for the ids of the one before it
/// (~13,000 packets or threads under `cxp.send` load, far fewer under a light one),
/// plus an eighth: one layer where doubling from a fixed size left up to twice the
/// bits the ids needed.
const GENERATION_FIRST_LAYER: usize = 4_096;

/// The generation of the row of the entry created at `sequence`.
pub(crate) fn generation(sequence: u64) -> u64 {
    sequence >> GENERATION_BITS
}

/// The key of `id`'s index row in `generation`: `table` (the row table's first byte),
/// the generation (big-endian), the id. The rows a commit adds land in the newest
/// generation's pages.
pub(crate) fn row_in(table: u8, generation: u64, id: &[u8]) -> Vec<u8> {
    let mut key = Vec::with_capacity(9 + id.len());
    key.push(table);
    key.extend_from_slice(&generation.to_be_bytes());
    key.extend_from_slice(id);
    key
}

/// The generation and id bytes of index row `key` of `view`.
pub(crate) fn row_parts<'a>(view: &str, key: &'a [u8]) -> Result<(u64, &'a [u8]), StoredError> {
    let generation = key
        .get(1..9)
        .and_then(|g| <[u8; 8]>::try_from(g).ok())
        .map(u64::from_be_bytes);
    match (generation, key.get(9..)) {
        (Some(g), Some(id)) => Ok((g, id)),
        _ => Err(StoredError::entry(
            view,
            format!("bad index row key {key:?}"),
        )),
    }
}

/// The sequence index row `key` of `view` holds (`value`, 8 bytes big-endian),
/// `None` when the store does not hold the row (a runner hands back an empty value).
pub(crate) fn row_sequence(
    view: &str,
    key: &[u8],
    value: &[u8],
) -> Result<Option<u64>, StoredError> {
    if value.is_empty() {
        return Ok(None);
    }
    let at: [u8; 8] = value.try_into().map_err(|_| {
        StoredError::entry(
            view,
            format!("index row {key:?} holds {} bytes", value.len()),
        )
    })?;
    Ok(Some(u64::from_be_bytes(at)))
}

/// Commit bookkeeping of index rows: up to which event of `cxp.traffic` the store
/// holds the view (an entry created after it is new, and gets its row), and whether
/// the store is of the form without rows (restored whole, kept whole, and written
/// whole with its rows by the next commit). Not part of the view's value: always
/// equal, never serialized.
#[derive(Debug, Clone, Default)]
pub(crate) struct Rows {
    /// What the last confirmed commit stored.
    through: Checkpoint,
    /// What the commit in flight stores.
    taking: Option<Checkpoint>,
    /// The store has no index rows: the next commit writes the view whole.
    missing: bool,
}

impl Rows {
    /// The bookkeeping of a view restored from a store that holds it through
    /// `through`, with index rows (`has_rows`) or from before them.
    pub(crate) fn restored(through: Checkpoint, has_rows: bool) -> Self {
        Rows {
            through,
            taking: None,
            missing: !has_rows,
        }
    }

    /// Whether the store lacks index rows (the next commit writes the view whole).
    pub(crate) fn missing(&self) -> bool {
        self.missing
    }

    /// A commit takes the view as of `checkpoint`.
    pub(crate) fn taking(&mut self, checkpoint: Checkpoint) {
        self.taking = Some(checkpoint);
    }

    /// Whether the entry created at `sequence` is not stored yet.
    pub(crate) fn new_at(&self, sequence: u64) -> bool {
        !self.through.has_passed(Stream::CxpTraffic, sequence)
    }

    /// The commit in flight is stored.
    pub(crate) fn stored(&mut self) {
        if let Some(through) = self.taking.take() {
            self.through = through;
            self.missing = false;
        }
    }
}

impl PartialEq for Rows {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl<K> Default for ColdIds<K> {
    fn default() -> Self {
        ColdIds {
            seen: LetGoKeys::default(),
            count: 0,
            generations: BTreeMap::new(),
            found: HashMap::new(),
            ruled_out: HashMap::new(),
        }
    }
}

impl<K: Eq + Hash> ColdIds<K> {
    /// Where `id` is, for an id that is not in memory.
    pub fn place<Q>(&self, id: &Q) -> Place
    where
        K: Borrow<Q>,
        Q: Hash + Eq + AsRef<[u8]> + ?Sized,
    {
        if let Some(at) = self.found.get(id) {
            return Place::Stored(*at);
        }
        self.rows(id).next().map_or(Place::Nowhere, Place::Row)
    }

    /// The generations that may hold a row of `id` (not in memory), newest first.
    fn rows<'a, Q>(&'a self, id: &'a Q) -> impl Iterator<Item = u64> + 'a
    where
        K: Borrow<Q>,
        Q: Hash + Eq + AsRef<[u8]> + ?Sized,
    {
        let bytes = id.as_ref();
        let ruled_out = self.ruled_out.get(id);
        let at = stamp(bytes);
        let let_go = self.seen.may_hold_stamped(bytes, at);
        self.generations
            .iter()
            .rev()
            .filter(move |_| let_go)
            .filter(move |(_, ids)| ids.may_hold(bytes, at))
            .map(|(g, _)| *g)
            .filter(move |g| !ruled_out.is_some_and(|r| r.contains(g)))
    }

    /// The keys of the rows of `id` (not in memory) to read, newest generation first;
    /// `key` makes a row's key from its generation.
    pub fn row_keys<Q>(&self, id: &Q, key: impl Fn(u64) -> Vec<u8>) -> Vec<Vec<u8>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + AsRef<[u8]> + ?Sized,
    {
        self.rows(id).map(key).collect()
    }

    /// A row of `id` is stored for the entry created at `sequence`.
    pub fn row_written<Q: AsRef<[u8]> + ?Sized>(&mut self, id: &Q, sequence: u64) {
        let generation = generation(sequence);
        let bytes = id.as_ref();
        let at = self.seen.believed_stamp(bytes);
        if let Some(ids) = self.generations.get_mut(&generation) {
            ids.insert(bytes, at);
            return;
        }
        let first = self
            .generations
            .values()
            .next_back()
            .map_or(GENERATION_FIRST_LAYER, |last| {
                (last.others() + last.others() / 8).max(GENERATION_FIRST_LAYER)
            });
        let mut ids = Generation::starting_at(first);
        ids.insert(bytes, at);
        self.generations.insert(generation, ids);
    }

    /// What `id`'s index row in `generation` said: the entry is stored under `at`, or
    /// (`None`) the row is not stored.
    pub fn found(&mut self, id: K, generation: u64, at: Option<u64>) {
        match at {
            Some(at) => {
                self.found.insert(id, at);
            }
            None => self.ruled_out.entry(id).or_default().push(generation),
        }
    }

    /// The view folded an event stamped `at` (the server's clock, never an id's).
    pub fn tick(&mut self, at: DateTime<Utc>) {
        self.seen.tick(at);
    }

    /// `id` was let go of (its entry and index row are stored).
    pub fn let_go<Q: AsRef<[u8]> + ?Sized>(&mut self, id: &Q) {
        self.seen.insert(id.as_ref());
        self.count += 1;
    }

    /// `id`'s entry was read back into memory.
    pub fn taken_back<Q>(&mut self, id: &Q)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.found.remove(id);
        self.count = self.count.saturating_sub(1);
    }

    /// Forgets what index rows said (after a commit, between chunks of events).
    pub fn settle(&mut self) {
        self.found = HashMap::new();
        self.ruled_out = HashMap::new();
    }

    /// How many entries are let go of.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether no entry is let go of.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Bytes the filters hold.
    #[cfg(test)]
    pub fn filter_bytes(&self) -> usize {
        self.seen.filter_bytes()
            + self
                .generations
                .values()
                .map(|g| g.filter().bytes())
                .sum::<usize>()
    }
}

/// Views are equal by what they hold: two views that let the same number of entries
/// go are equal whatever their filters remember (a filter depends on the order in
/// which entries left; the entries themselves are compared through the store).
impl<K> PartialEq for ColdIds<K> {
    fn eq(&self, other: &Self) -> bool {
        self.count == other.count
    }
}

mod generation;
#[cfg(test)]
mod tests;
