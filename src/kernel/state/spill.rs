//! [`SpillTable`]: a map that keeps its recently changed entries in memory and the rest
//! in a file.
//!
//! The kernel's aggregate holds every packet and every thread it has ever seen: a
//! duplicate `message_id` must be refused and a late acknowledgement must still find
//! its packet, months later. Most of them are never touched again once their
//! conversation has moved on, so keeping all of them in memory made the kernel's
//! resident size follow the history (~2 KB per packet, issue 18). A `SpillTable`
//! keeps the `hot` entries changed most recently in memory and writes the others,
//! encoded, to an anonymous file; reading a cold entry decodes it from there, and
//! changing one brings it back into memory.
//!
//! The file is scratch space for this process, not a store: it is created unlinked
//! (nothing to clean up, nothing another process could mistake for state) and the
//! aggregate is still rebuilt from the log at every start. So which entries are hot
//! never changes an answer — a state folded with a tiny hot set equals one folded
//! entirely in memory (`tests/kernel_spill.rs` compares their digests).
//!
//! Costs: an entry is encoded and appended when it leaves memory, and decoded on each
//! read while cold. Space of entries that came back into memory is reclaimed by
//! rewriting the file once it holds more dead bytes than live ones (and at least
//! [`COMPACT_FLOOR`]). If the file cannot be written (disk full), spilling stops with
//! one error line and the table keeps everything in memory: slower to fail than to
//! lose a packet.

use std::borrow::{Borrow, Cow};
use std::collections::HashMap;
use std::fs::File;
use std::hash::Hash;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use lru::LruCache;

/// Dead bytes below which the file is never rewritten.
pub const COMPACT_FLOOR: u64 = 64 << 20;

/// Encoded bytes gathered before one write to the file.
const WRITE_BUFFER: usize = 256 << 10;

/// How a value is written to the spill file and read back.
pub trait Spillable: Sized {
    /// The value's bytes.
    fn encode(&self) -> Result<Vec<u8>, String>;
    /// The value again, from [`Spillable::encode`]'s bytes.
    fn decode(bytes: &[u8]) -> Result<Self, String>;
}

/// Where cold entries go and how many stay in memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpillConfig {
    /// Directory of the (unlinked) spill files; on a disk, not a RAM-backed `/tmp`.
    pub dir: PathBuf,
    /// Entries kept in memory per table (packets; threads).
    pub hot: usize,
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    offset: u64,
    len: u32,
}

#[derive(Debug)]
struct SpillFile {
    dir: PathBuf,
    file: File,
    /// Bytes written to `file`; `buffer` continues from here.
    flushed: u64,
    buffer: Vec<u8>,
    live: u64,
    dead: u64,
}

impl SpillFile {
    fn create(dir: PathBuf) -> io::Result<Self> {
        std::fs::create_dir_all(&dir)?;
        let file = tempfile::tempfile_in(&dir)?;
        Ok(SpillFile {
            dir,
            file,
            flushed: 0,
            buffer: Vec::new(),
            live: 0,
            dead: 0,
        })
    }

    fn append(&mut self, bytes: &[u8]) -> io::Result<Slot> {
        let len = u32::try_from(bytes.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "entry over 4 GiB"))?;
        let offset = self.flushed + self.buffer.len() as u64;
        self.buffer.extend_from_slice(bytes);
        if self.buffer.len() >= WRITE_BUFFER {
            self.flush()?;
        }
        self.live += u64::from(len);
        Ok(Slot { offset, len })
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        self.file.write_all_at(&self.buffer, self.flushed)?;
        self.flushed += self.buffer.len() as u64;
        self.buffer.clear();
        Ok(())
    }

    fn read(&self, slot: Slot) -> io::Result<Vec<u8>> {
        let len = slot.len as usize;
        if slot.offset >= self.flushed {
            let start = (slot.offset - self.flushed) as usize;
            return self
                .buffer
                .get(start..start + len)
                .map(<[u8]>::to_vec)
                .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "slot past the end"));
        }
        let mut bytes = vec![0; len];
        self.file.read_exact_at(&mut bytes, slot.offset)?;
        Ok(bytes)
    }

    fn release(&mut self, slot: Slot) {
        self.live = self.live.saturating_sub(u64::from(slot.len));
        self.dead += u64::from(slot.len);
    }
}

/// The map; see the module docs. Without a [`SpillConfig`] it is a plain in-memory
/// map.
#[derive(Debug)]
pub struct SpillTable<K: Hash + Eq, V> {
    /// In memory, least recently changed first out.
    hot: LruCache<K, Box<V>>,
    cold: HashMap<K, Slot>,
    file: Option<SpillFile>,
    limit: usize,
    config: Option<SpillConfig>,
    /// Dead bytes below which the file is not rewritten ([`COMPACT_FLOOR`]).
    compact_floor: u64,
}

impl<K: Hash + Eq + Clone + std::fmt::Debug, V: Clone + Spillable> SpillTable<K, V> {
    /// A table keeping `config.hot` entries in memory (everything, without a config).
    pub fn new(config: Option<SpillConfig>) -> Self {
        SpillTable {
            hot: LruCache::unbounded(),
            cold: HashMap::new(),
            file: None,
            limit: config.as_ref().map_or(usize::MAX, |c| c.hot.max(1)),
            config,
            compact_floor: COMPACT_FLOOR,
        }
    }

    /// Entries, hot and cold.
    pub fn len(&self) -> usize {
        self.hot.len() + self.cold.len()
    }

    /// Entries held in memory now.
    pub fn hot_len(&self) -> usize {
        self.hot.len()
    }

    /// Whether `key` has an entry.
    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.hot.contains(key) || self.cold.contains_key(key)
    }

    /// The entry of `key`: borrowed while hot, decoded from the file while cold.
    pub fn get<Q>(&self, key: &Q) -> Option<Cow<'_, V>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + std::fmt::Debug + ?Sized,
    {
        if let Some(v) = self.hot.peek(key) {
            return Some(Cow::Borrowed(&**v));
        }
        let slot = *self.cold.get(key)?;
        self.load(key, slot).map(Cow::Owned)
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
        if let Some(slot) = self.cold.remove(&key) {
            if let Some(f) = self.file.as_mut() {
                f.release(slot);
            }
        }
        if !self.hot.contains(&key) {
            self.make_room();
        }
        self.hot.put(key, Box::new(value));
    }

    /// The entry of `key` to change, made by `make` if there is none (or if its cold
    /// copy could not be read back, which `load` logs).
    pub fn get_or_insert_with(&mut self, key: &K, make: impl FnOnce() -> V) -> &mut V {
        if !self.promote(key) {
            self.make_room();
        }
        self.hot.get_or_insert_mut(key.clone(), || Box::new(make()))
    }

    /// Brings `key`'s entry into memory if it is cold; whether it is hot now.
    fn promote(&mut self, key: &K) -> bool {
        if self.hot.contains(key) {
            return true;
        }
        let Some(slot) = self.cold.remove(key) else {
            return false;
        };
        let value = self.load(key, slot);
        if let Some(f) = self.file.as_mut() {
            f.release(slot);
        }
        let Some(value) = value else {
            return false;
        };
        self.make_room();
        self.hot.put(key.clone(), Box::new(value));
        true
    }

    /// Every entry (no order): the hot ones, then the cold ones decoded one by one.
    pub fn iter(&self) -> impl Iterator<Item = (&K, Cow<'_, V>)> {
        let hot = self.hot.iter().map(|(k, v)| (k, Cow::Borrowed(&**v)));
        let cold = self
            .cold
            .iter()
            .filter_map(|(k, slot)| self.load(k, *slot).map(|v| (k, Cow::Owned(v))));
        hot.chain(cold)
    }

    fn load<Q: std::fmt::Debug + ?Sized>(&self, key: &Q, slot: Slot) -> Option<V> {
        let file = self.file.as_ref()?;
        let loaded = file
            .read(slot)
            .map_err(|e| e.to_string())
            .and_then(|bytes| V::decode(&bytes));
        match loaded {
            Ok(v) => Some(v),
            Err(error) => {
                tracing::error!(?key, %error, "the kernel could not read back an entry it spilled to disk");
                None
            }
        }
    }

    /// Moves the least recently changed entries to the file until one more fits.
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

    fn spill(&mut self, key: &K, value: &V) -> io::Result<()> {
        if self.file.is_none() {
            let Some(dir) = self.config.as_ref().map(|c| c.dir.clone()) else {
                return Err(io::Error::other("no spill directory"));
            };
            let file = SpillFile::create(dir.clone())
                .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", dir.display())))?;
            self.file = Some(file);
        }
        let bytes = value.encode().map_err(io::Error::other)?;
        let slot = match self.file.as_mut() {
            Some(f) => f.append(&bytes)?,
            None => return Err(io::Error::other("no spill file")),
        };
        self.cold.insert(key.clone(), slot);
        self.compact_if_due();
        Ok(())
    }

    /// Rewrites the file with only the live entries once dead bytes dominate.
    fn compact_if_due(&mut self) {
        let Some(file) = self.file.as_ref() else {
            return;
        };
        if file.dead < self.compact_floor || file.dead < file.live {
            return;
        }
        match self.rewrite() {
            Ok(fresh) => self.file = Some(fresh),
            Err(error) => {
                tracing::warn!(%error, "rewriting the kernel's spill file failed; keeping the old one")
            }
        }
    }

    fn rewrite(&mut self) -> io::Result<SpillFile> {
        let Some(old) = self.file.as_ref() else {
            return Err(io::Error::other("no spill file"));
        };
        let mut fresh = SpillFile::create(old.dir.clone())?;
        let mut moved = HashMap::with_capacity(self.cold.len());
        for (key, slot) in &self.cold {
            let bytes = old.read(*slot)?;
            moved.insert(key.clone(), fresh.append(&bytes)?);
        }
        fresh.flush()?;
        self.cold = moved;
        Ok(fresh)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use proptest::prelude::*;

    use super::{SpillConfig, SpillTable, Spillable};

    #[derive(Debug, Clone, PartialEq)]
    struct Text(String);

    impl Spillable for Text {
        fn encode(&self) -> Result<Vec<u8>, String> {
            Ok(self.0.clone().into_bytes())
        }
        fn decode(bytes: &[u8]) -> Result<Self, String> {
            String::from_utf8(bytes.to_vec())
                .map(Text)
                .map_err(|e| e.to_string())
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert(u8, String),
        Append(u8, String),
        GetOrInsert(u8, String),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0u8..40, "[a-z]{0,300}").prop_map(|(k, v)| Op::Insert(k, v)),
            (0u8..40, "[a-z]{0,30}").prop_map(|(k, v)| Op::Append(k, v)),
            (0u8..40, "[a-z]{0,30}").prop_map(|(k, v)| Op::GetOrInsert(k, v)),
        ]
    }

    proptest! {
        // ISSUE-18: the kernel's aggregate keeps at most its hot entries in memory
        /// Whatever the changes, the table answers like a `HashMap`, holds at most
        /// `hot` entries in memory, and its file is rewritten (every rewrite is forced
        /// here) without losing an entry.
        #[test]
        fn a_spill_table_answers_like_a_map(hot in 1usize..6, ops in proptest::collection::vec(op(), 1..300)) {
            let dir = tempfile::tempdir().expect("temp dir");
            let mut table: SpillTable<u8, Text> = SpillTable::new(Some(SpillConfig {
                dir: dir.path().to_path_buf(),
                hot,
            }));
            table.compact_floor = 0;
            let mut model: HashMap<u8, String> = HashMap::new();
            for op in ops {
                match op {
                    Op::Insert(k, v) => {
                        table.insert(k, Text(v.clone()));
                        model.insert(k, v);
                    }
                    Op::Append(k, v) => {
                        if let Some(t) = table.get_mut(&k) {
                            t.0.push_str(&v);
                        }
                        if let Some(m) = model.get_mut(&k) {
                            m.push_str(&v);
                        }
                    }
                    Op::GetOrInsert(k, v) => {
                        table.get_or_insert_with(&k, || Text(v.clone())).0.push('!');
                        model.entry(k).or_insert(v).push('!');
                    }
                }
                prop_assert!(table.hot_len() <= hot);
                prop_assert_eq!(table.len(), model.len());
            }
            for k in 0u8..40 {
                prop_assert_eq!(table.get(&k).map(|t| t.0.clone()), model.get(&k).cloned());
                prop_assert_eq!(table.contains_key(&k), model.contains_key(&k));
            }
            let mut all: Vec<(u8, String)> = table.iter().map(|(k, v)| (*k, v.0.clone())).collect();
            all.sort();
            let mut expected: Vec<(u8, String)> = model.into_iter().collect();
            expected.sort();
            prop_assert_eq!(all, expected);
        }
    }

    // ISSUE-18: a spill that cannot be written loses nothing
    /// A spill directory that cannot be created (here: under a regular file): the
    /// table keeps everything in memory and answers as before.
    #[test]
    fn a_spill_that_cannot_be_written_keeps_everything_in_memory() {
        let dir = tempfile::tempdir().expect("temp dir");
        let blocker = dir.path().join("a-file");
        std::fs::write(&blocker, b"not a directory").expect("file written");
        let mut table: SpillTable<u32, Text> = SpillTable::new(Some(SpillConfig {
            dir: blocker.join("spill"),
            hot: 2,
        }));
        for i in 0..50 {
            table.insert(i, Text(i.to_string()));
        }
        assert_eq!(table.hot_len(), 50, "nothing left memory");
        assert!(table.file.is_none() && table.cold.is_empty());
        for i in 0..50 {
            assert_eq!(table.get(&i).map(|t| t.0.clone()), Some(i.to_string()));
        }
    }

    /// Without a config nothing leaves memory and no file is made.
    #[test]
    fn without_a_config_everything_stays_in_memory() {
        let mut table: SpillTable<u32, Text> = SpillTable::new(None);
        for i in 0..5_000 {
            table.insert(i, Text(i.to_string()));
        }
        assert_eq!(table.hot_len(), 5_000);
        assert!(table.file.is_none() && table.cold.is_empty());
    }
}
