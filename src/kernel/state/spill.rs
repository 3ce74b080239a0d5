//! [`SpillTable`]: a map that keeps its recently changed entries in memory and the rest
//! on disk.
//!
//! The kernel's aggregate holds every packet and every thread it has ever seen: a
//! duplicate `message_id` must be refused and a late acknowledgement must still find
//! its packet, months later. Most of them are never touched again once their
//! conversation has moved on, so keeping all of them in memory made the kernel's
//! resident size follow the history (~2 KB per packet, issue 18). A `SpillTable`
//! keeps the `hot` entries changed most recently in memory and writes the others,
//! encoded, to a scratch table on disk ([`Scratch`]: a B-tree in an unlinked file);
//! reading a cold entry decodes it from there, and changing one brings it back into
//! memory. Of a cold entry at most ~2 bytes stay in memory, in a Bloom filter
//! ([`LetGoKeys`]; none for the ids the server stamps, UUID v7) that answers "never
//! held" for keys the table has not seen (most lookups: new message ids and threads);
//! a "maybe" is answered by the table from its pages.
//!
//! The scratch table is not a store: its file is created unlinked (nothing to clean
//! up, nothing another process could mistake for state) and the aggregate is still
//! rebuilt from the log at every start. So which entries are hot never changes an
//! answer — a state folded with a tiny hot set equals one folded entirely in memory
//! (`tests/kernel_spill.rs` compares their digests).
//!
//! Costs: an entry is encoded when it leaves memory; the changes to the scratch table
//! wait in a pending batch ([`PENDING_ENTRIES`]) applied in one transaction, and a read
//! of a cold entry decodes it (from the batch or from the table). If the scratch table
//! cannot be created or written (disk full), spilling stops with one error line and the
//! table keeps everything from then on in memory: slower to fail than to lose a packet.

mod scratch;
mod unsynced;

use std::borrow::{Borrow, Cow};
use std::collections::HashMap;
use std::hash::Hash;
use std::path::PathBuf;

use lru::LruCache;
use orchestrata_projections::let_go::LetGoKeys;
use uuid::Uuid;

use scratch::Scratch;

/// Pending changes to the scratch table (entries that left memory, cold copies of
/// entries that came back) gathered before one transaction applies them.
pub const PENDING_ENTRIES: usize = 1024;

/// Encoded bytes of pending entries that make the batch due before
/// [`PENDING_ENTRIES`] (a few large packets).
const PENDING_BYTES: usize = 4 << 20;

/// How a value is written to the scratch table and read back.
pub trait Spillable: Sized {
    /// The value's bytes.
    fn encode(&self) -> Result<Vec<u8>, String>;
    /// The value again, from [`Spillable::encode`]'s bytes.
    fn decode(bytes: &[u8]) -> Result<Self, String>;
}

/// A key as the scratch table names it: its bytes (a borrowed form such as `str` for
/// `String` has the same bytes as its owner).
pub trait SpillKey {
    /// The key's bytes.
    fn key_bytes(&self) -> &[u8];
}

/// A key that can be read back from its bytes (to walk every entry).
pub trait OwnedSpillKey: SpillKey + Sized {
    /// The key whose [`SpillKey::key_bytes`] these are.
    fn from_key_bytes(bytes: &[u8]) -> Option<Self>;
}

impl SpillKey for Uuid {
    fn key_bytes(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl OwnedSpillKey for Uuid {
    fn from_key_bytes(bytes: &[u8]) -> Option<Self> {
        Uuid::from_slice(bytes).ok()
    }
}

impl SpillKey for str {
    fn key_bytes(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl SpillKey for String {
    fn key_bytes(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl OwnedSpillKey for String {
    fn from_key_bytes(bytes: &[u8]) -> Option<Self> {
        String::from_utf8(bytes.to_vec()).ok()
    }
}

/// Where cold entries go and how many stay in memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpillConfig {
    /// Directory of the (unlinked) scratch files; on a disk, not a RAM-backed `/tmp`.
    pub dir: PathBuf,
    /// Entries kept in memory per table (packets; threads).
    pub hot: usize,
}

/// The map; see the module docs. Without a [`SpillConfig`] it is a plain in-memory
/// map.
#[derive(Debug)]
pub struct SpillTable<K: Hash + Eq, V> {
    /// In memory, least recently changed first out.
    hot: LruCache<K, Box<V>>,
    /// Changes not yet applied to the scratch table: `Some(bytes)`, an entry that left
    /// memory; `None`, the stored copy of an entry now hot, to remove.
    pending: HashMap<K, Option<Vec<u8>>>,
    /// Bytes of the `Some` entries in `pending`.
    pending_bytes: usize,
    /// Changes gathered before they are applied ([`PENDING_ENTRIES`]).
    batch: usize,
    /// Entries not in memory (pending or stored).
    cold: usize,
    scratch: Option<Scratch>,
    /// Every key ever spilled: lookups of keys the scratch table never held (new
    /// message ids and threads) are answered without it; keys the server stamped
    /// (UUID v7) take no filter bits.
    seen: LetGoKeys,
    /// The scratch table refused a batch: nothing is applied or spilled any more.
    failed: bool,
    limit: usize,
    config: Option<SpillConfig>,
}

impl<K, V> SpillTable<K, V>
where
    K: Hash + Eq + Clone + std::fmt::Debug + OwnedSpillKey,
    V: Clone + Spillable,
{
    /// A table keeping `config.hot` entries in memory (everything, without a config).
    pub fn new(config: Option<SpillConfig>) -> Self {
        SpillTable {
            hot: LruCache::unbounded(),
            pending: HashMap::new(),
            pending_bytes: 0,
            batch: PENDING_ENTRIES,
            cold: 0,
            scratch: None,
            seen: LetGoKeys::default(),
            failed: false,
            limit: config.as_ref().map_or(usize::MAX, |c| c.hot.max(1)),
            config,
        }
    }

    /// The kernel folded an event stamped `at`: keys stamped up to a minute past it are
    /// believed stamped by the server ([`LetGoKeys`]).
    pub fn tick(&mut self, at: chrono::DateTime<chrono::Utc>) {
        self.seen.tick(at);
    }

    /// Entries, hot and cold.
    pub fn len(&self) -> usize {
        self.hot.len() + self.cold
    }

    /// Entries held in memory now.
    pub fn hot_len(&self) -> usize {
        self.hot.len()
    }

    /// Size of the scratch file on disk: 0 until an entry first leaves memory (or when
    /// its size cannot be read).
    pub fn scratch_bytes(&self) -> u64 {
        self.scratch
            .as_ref()
            .and_then(|scratch| scratch.size_on_disk().ok())
            .unwrap_or(0)
    }

    /// Whether `key` has an entry (no value is decoded).
    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + SpillKey + std::fmt::Debug + ?Sized,
    {
        if self.hot.contains(key) {
            return true;
        }
        match self.pending.get(key) {
            Some(change) => change.is_some(),
            None => self.stored(key).is_some(),
        }
    }

    /// The entry of `key`: borrowed while hot, decoded from disk while cold.
    pub fn get<Q>(&self, key: &Q) -> Option<Cow<'_, V>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + SpillKey + std::fmt::Debug + ?Sized,
    {
        if let Some(v) = self.hot.peek(key) {
            return Some(Cow::Borrowed(&**v));
        }
        let decoded = match self.pending.get(key) {
            Some(change) => decode(key, change.as_deref()?),
            None => decode(key, &self.stored(key)?),
        };
        decoded.map(Cow::Owned)
    }

    /// The entry of `key` to change: brought into memory (and counted as the most
    /// recently changed).
    pub fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        if !self.promote(key) {
            return None;
        }
        self.hot.get_mut(key).map(|v| &mut **v)
    }

    /// Puts `value` under `key` (replacing any entry), in memory.
    pub fn insert(&mut self, key: K, value: V) {
        if !self.hot.contains(&key) {
            let cold = match self.pending.get(&key) {
                Some(change) => change.is_some(),
                None => self.stored(&key).is_some(),
            };
            if cold {
                self.take_pending(&key);
                self.cold -= 1;
            }
            self.make_room();
        }
        self.hot.put(key, Box::new(value));
        self.apply_if_due();
    }

    /// The entry of `key` to change, made by `make` if there is none (or if its cold
    /// copy could not be read back, which is logged).
    pub fn get_or_insert_with(&mut self, key: &K, make: impl FnOnce() -> V) -> &mut V {
        if !self.promote(key) {
            self.make_room();
            self.apply_if_due();
        }
        self.hot.get_or_insert_mut(key.clone(), || Box::new(make()))
    }

    /// Every entry (no order): the hot ones, then the cold ones decoded one by one.
    pub fn iter(&self) -> impl Iterator<Item = (Cow<'_, K>, Cow<'_, V>)> {
        let hot = self
            .hot
            .iter()
            .map(|(k, v)| (Cow::Borrowed(k), Cow::Borrowed(&**v)));
        let pending = self.pending.iter().filter_map(|(k, change)| {
            let value = decode(k, change.as_deref()?)?;
            Some((Cow::Borrowed(k), Cow::Owned(value)))
        });
        let stored = self
            .scratch
            .iter()
            .flat_map(Scratch::entries)
            .filter_map(|(k, bytes)| {
                let key = K::from_key_bytes(&k)?;
                if self.pending.contains_key(&key) {
                    // Pending: listed above if cold, or hot.
                    return None;
                }
                let value = decode(&key, &bytes)?;
                Some((Cow::Owned(key), Cow::Owned(value)))
            });
        hot.chain(pending).chain(stored)
    }

    /// Brings `key`'s entry into memory if it is cold; whether it is hot now.
    fn promote(&mut self, key: &K) -> bool {
        if self.hot.contains(key) {
            return true;
        }
        let bytes = match self.pending.contains_key(key) {
            true => self.take_pending(key),
            false => {
                let stored = self.stored(key);
                if stored.is_some() {
                    self.pending.insert(key.clone(), None);
                }
                stored
            }
        };
        let Some(bytes) = bytes else {
            return false;
        };
        self.cold -= 1;
        let Some(value) = decode(key, &bytes) else {
            return false;
        };
        self.make_room();
        self.hot.put(key.clone(), Box::new(value));
        self.apply_if_due();
        true
    }

    /// The pending bytes of `key`, leaving a removal of its stored copy in their place.
    fn take_pending(&mut self, key: &K) -> Option<Vec<u8>> {
        let change = self.pending.entry(key.clone()).or_insert(None);
        let bytes = change.take();
        if let Some(b) = &bytes {
            self.pending_bytes -= b.len();
        }
        bytes
    }

    /// The stored bytes of `key` (the pending batch aside).
    fn stored<Q>(&self, key: &Q) -> Option<Vec<u8>>
    where
        Q: SpillKey + std::fmt::Debug + ?Sized,
    {
        if !self.seen.may_hold(key.key_bytes()) {
            return None;
        }
        match self.scratch.as_ref()?.get(key.key_bytes()) {
            Ok(bytes) => bytes,
            Err(error) => {
                tracing::error!(?key, %error, "the kernel could not read back an entry it spilled to disk");
                None
            }
        }
    }

    /// Moves the least recently changed entries out of memory until one more fits.
    fn make_room(&mut self) {
        while self.hot.len() >= self.limit {
            let Some((key, value)) = self.hot.pop_lru() else {
                return;
            };
            if let Err(error) = self.spill(&key, &value) {
                tracing::error!(%error, "the kernel cannot spill to disk; keeping its whole state in memory");
                // Spilling is off for good: keep everything from now on.
                self.hot.put(key, value);
                self.limit = usize::MAX;
                return;
            }
        }
    }

    fn spill(&mut self, key: &K, value: &V) -> Result<(), String> {
        if self.scratch.is_none() {
            let Some(dir) = self.config.as_ref().map(|c| c.dir.clone()) else {
                return Err("no spill directory".into());
            };
            self.scratch = Some(Scratch::create(&dir)?);
        }
        let bytes = value.encode()?;
        self.seen.insert(key.key_bytes());
        self.pending_bytes += bytes.len();
        self.pending.insert(key.clone(), Some(bytes));
        self.cold += 1;
        Ok(())
    }

    /// Applies the pending batch once it is full; on failure keeps it (readable) and
    /// stops spilling.
    fn apply_if_due(&mut self) {
        if self.failed || (self.pending.len() < self.batch && self.pending_bytes < PENDING_BYTES) {
            return;
        }
        let Some(scratch) = self.scratch.as_ref() else {
            return;
        };
        let changes = self
            .pending
            .iter()
            .map(|(k, change)| (k.key_bytes(), change.as_deref()));
        match scratch.apply(changes) {
            Ok(()) => {
                self.pending.clear();
                self.pending_bytes = 0;
            }
            Err(error) => {
                tracing::error!(%error, "the kernel cannot write its spilled entries; keeping its whole state in memory");
                self.failed = true;
                self.limit = usize::MAX;
            }
        }
    }
}

/// `bytes` decoded, or `None` after an error line naming `key`.
fn decode<V: Spillable, Q: std::fmt::Debug + ?Sized>(key: &Q, bytes: &[u8]) -> Option<V> {
    match V::decode(bytes) {
        Ok(v) => Some(v),
        Err(error) => {
            tracing::error!(?key, %error, "the kernel could not read back an entry it spilled to disk");
            None
        }
    }
}

#[cfg(test)]
mod tests;
