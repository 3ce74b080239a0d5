//! [`ViewStore`]: views and their checkpoints in a key-value file of their own
//! (`<views dir>/views.redb`; see `kv.rs` for why redb).

mod body;
mod entries;
mod kv;

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use orchestrata_projections::{Changes, Checkpoint, StoredError, View, ViewName};
use orchestrata_schemas::events::Stream;
use serde::{Deserialize, Serialize};

use super::ProjectionError;
use crate::log::config::{Backend, LogConfig, DEFAULT_SLED_CACHE_BYTES};

/// The largest value the store writes (view chunks, manifest pages, entry parts).
///
/// Values of at most one 4 KiB page keep B-tree leaves small, so a commit that touches
/// one entry of a large thread rewrites a few pages, not the whole thread, and no
/// value needs pages of its own outside the tree.
pub const PART_BYTES: usize = 4096;

/// A full commit writes its entries in batches of about this many bytes (a view of a
/// million packets is not one transaction's dirty pages in memory).
const FULL_BATCH_BYTES: usize = 8 << 20;

/// The log epoch of each stream a stored view was folded from.
pub type Epochs = BTreeMap<Stream, String>;

/// Where views are stored for a log configuration: `<data_dir>/views` for the embedded
/// log; `./data/views` next to a Kafka log (views are always local).
pub fn views_dir(config: &LogConfig) -> PathBuf {
    match &config.backend {
        Backend::Sled { data_dir } => data_dir.join("views"),
        Backend::Kafka { .. } => PathBuf::from("data").join("views"),
    }
}

/// A view's position as stored: its checkpoint and the epochs of the streams it was
/// folded from (a changed epoch means the log was recreated and the view is void).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredCheckpoint {
    /// Epoch per stream at the time of folding.
    pub epochs: BTreeMap<Stream, String>,
    /// Last applied sequence per stream.
    pub checkpoint: Checkpoint,
}

/// Space a view takes in the store ([`ViewStore::usage`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoreUsage {
    /// Bytes of its keys and values.
    pub bytes: u64,
    /// Keys (entries' parts, chunks, manifest pages, marker, checkpoint).
    pub keys: u64,
    /// Entries of a view stored entry by entry (0 for a view stored whole).
    pub entries: u64,
}

/// A view read back from the store ([`ViewStore::load_stored`]).
pub struct Loaded<V> {
    /// The view.
    pub view: V,
    /// The epochs it was folded from.
    pub epochs: Epochs,
    /// Whether it was stored in this version's form. A view read from an earlier form
    /// must be written whole (`full`) at its next commit, which replaces that form.
    pub current: bool,
}

#[derive(Serialize)]
struct StoredRef<'a, V: ?Sized> {
    epochs: &'a BTreeMap<Stream, String>,
    view: &'a V,
}

#[derive(Deserialize)]
struct Stored<V> {
    epochs: BTreeMap<Stream, String>,
    view: V,
}

/// The store: one table of byte keys. For each view, written together in one atomic batch:
///
/// - `<name>.entries`: the marker of this form (head and entries);
/// - the head ([`View::take_changes`]; the whole view for views stored whole) as a
///   content-chunked body (`<name>.c.*`, `<name>.m.*`, `<name>.manifest`; see `body.rs`);
/// - the entries that changed, each under `<name>.e.<key>` in parts of at most 4 KiB
///   (see `entries.rs`);
/// - `<name>.checkpoint`: epochs and checkpoint as JSON, so status reads are cheap.
///
/// So a commit writes what changed since the last one, whatever the size of the view.
/// Views stored by earlier versions (the whole view with its epochs, chunked or under
/// `<name>`, as MessagePack or JSON) are still read, and replaced at their next commit.
///
/// Encoding is MessagePack in serde's compact (not human-readable) form: the same
/// choices as the Avro log (timestamps as microseconds, JSON payloads as their text), so
/// a view read back equals, byte for byte, the one folded from the log.
#[derive(Clone)]
pub struct ViewStore {
    kv: kv::Kv,
    path: Arc<Path>,
}

/// Why one entry could not be read: the store failed, or its parts do not add up.
enum EntryRead {
    Store(ProjectionError),
    Parts(String),
}

impl From<String> for EntryRead {
    fn from(reason: String) -> Self {
        EntryRead::Parts(reason)
    }
}

fn marker_key(name: &str) -> String {
    format!("{name}.entries")
}

fn checkpoint_key(name: &str) -> String {
    format!("{name}.checkpoint")
}

/// How many entries the view has (u64, big-endian): a load that assembles another
/// number finds a lost or stray entry, which the entries alone cannot show.
fn count_key(name: &str) -> String {
    format!("{name}.count")
}

impl ViewStore {
    /// Opens (creating) the store in `dir` with the default page cache
    /// ([`DEFAULT_SLED_CACHE_BYTES`]). Fails if another process holds it.
    pub fn open(dir: impl AsRef<Path>) -> Result<Self, ProjectionError> {
        Self::open_with_cache(dir, DEFAULT_SLED_CACHE_BYTES)
    }

    /// Opens (creating) the store in `dir` (the file `views.redb` in it); its page
    /// cache takes at most `cache_bytes`. A view store of an earlier version (sled) in
    /// `dir` is removed: its views are folded again from the log. Fails if another
    /// process holds it.
    pub fn open_with_cache(
        dir: impl AsRef<Path>,
        cache_bytes: u64,
    ) -> Result<Self, ProjectionError> {
        let path: Arc<Path> = Arc::from(dir.as_ref());
        let kv = kv::Kv::open(&path, cache_bytes)?;
        Ok(ViewStore { kv, path })
    }

    /// A store that lives in memory only and is gone when dropped: for processes that
    /// keep views to answer reads but are not the projector of record (a split
    /// deployment's gateways), which rebuild them from the log at every start.
    pub fn temporary() -> Result<Self, ProjectionError> {
        Ok(ViewStore {
            kv: kv::Kv::temporary()?,
            path: Arc::from(Path::new("<memory>")),
        })
    }

    /// The store's directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes all of `view` with its checkpoint and `epochs`, replacing whatever the
    /// store held for it (a rebuild's result). Durable when it returns.
    pub fn save<V: View>(&self, view: &mut V, epochs: &Epochs) -> Result<(), ProjectionError> {
        let changes = view
            .take_changes(true)
            .map_err(|e| self.error(e.to_string()))?;
        self.commit(V::NAME, &changes, view.checkpoint(), epochs, true)
    }

    /// Writes one commit of view `name`: `changes` as taken from the view, and the
    /// view's `checkpoint` at that moment, with `epochs`. Full when `full` or when the
    /// view says so (`changes.full`).
    ///
    /// An incremental commit (`full == false`) is one atomic batch: the changed entries,
    /// the head, the checkpoint. A full commit first voids the stored view (checkpoint,
    /// marker and manifest removed), removes every stored entry and chunk, writes the
    /// entries in batches, and writes head, marker and checkpoint last: a crash in
    /// between leaves no stored view, which the next start refolds from the log.
    /// Durable when it returns.
    pub fn commit(
        &self,
        name: ViewName,
        changes: &Changes,
        checkpoint: &Checkpoint,
        epochs: &Epochs,
        full: bool,
    ) -> Result<(), ProjectionError> {
        let view = name.as_str();
        let full = full || changes.full;
        let position = serde_json::to_vec(&StoredRef {
            epochs,
            view: checkpoint,
        })
        .map_err(|e| self.error(format!("encoding checkpoint of {view}: {e}")))?;
        let mut batch = kv::Batch::default();
        let mut count = 0i64;
        let old_body = if full {
            self.clear(name)?;
            let mut bytes = 0;
            for (key, value) in &changes.entries {
                let (staged, added) =
                    self.stage_entry(name, key, value.as_deref(), None, &mut batch)?;
                count += added;
                bytes += staged;
                if bytes >= FULL_BATCH_BYTES {
                    self.write(std::mem::take(&mut batch))?;
                    bytes = 0;
                }
            }
            None
        } else {
            count = i64::try_from(self.entry_count(name)?.unwrap_or(0)).unwrap_or(i64::MAX);
            let stored = self.kv.reader()?;
            for (i, (key, value)) in changes.entries.iter().enumerate() {
                let stored = (!changes.is_fresh(i)).then_some(&stored);
                count += self
                    .stage_entry(name, key, value.as_deref(), stored, &mut batch)?
                    .1;
            }
            self.manifest(name)?
        };
        let count = u64::try_from(count).unwrap_or(0);
        batch.insert(count_key(view).as_bytes(), count.to_be_bytes());
        self.stage_body(name, &changes.head, old_body, &mut batch);
        // The whole view as earlier versions stored it.
        batch.remove(view.as_bytes());
        batch.insert(marker_key(view).as_bytes(), b"1".as_slice());
        batch.insert(checkpoint_key(view).as_bytes(), position);
        self.kv.apply(batch, true)
    }

    /// Adds entry `key` of view `name` (removed when `value` is `None`) to `batch`;
    /// returns the bytes staged and the change in the number of entries. With a
    /// `stored` snapshot (`replace`), the stored entry is looked up: parts a longer
    /// earlier value left are removed (a full commit has removed every entry already).
    fn stage_entry(
        &self,
        name: ViewName,
        key: &[u8],
        value: Option<&[u8]>,
        stored: Option<&kv::Reader>,
        batch: &mut kv::Batch,
    ) -> Result<(usize, i64), ProjectionError> {
        let view = name.as_str();
        let old = match stored {
            Some(stored) => match stored.get(&entries::part_key(view, key, 0))? {
                Some(first) => entries::count(&first).unwrap_or(1),
                None => 0,
            },
            None => 0,
        };
        let parts = match value {
            Some(value) => entries::cut(value).ok_or_else(|| {
                self.error(format!(
                    "an entry of view {view} of {} bytes exceeds the store's limit",
                    value.len()
                ))
            })?,
            None => Vec::new(),
        };
        let mut bytes = 0;
        let written = u16::try_from(parts.len()).unwrap_or(u16::MAX);
        for (part, data) in (0u16..).zip(parts) {
            bytes += data.len();
            batch.insert(entries::part_key(view, key, part), data);
        }
        for gone in written..old {
            batch.remove(entries::part_key(view, key, gone));
        }
        let added = match (old, value) {
            (0, Some(_)) => 1,
            (1.., None) => -1,
            _ => 0,
        };
        Ok((bytes, added))
    }

    /// The number of entries view `name` has stored, if it is stored entry by entry.
    fn entry_count(&self, name: ViewName) -> Result<Option<u64>, ProjectionError> {
        let Some(bytes) = self.get(count_key(name.as_str()).as_bytes())? else {
            return Ok(None);
        };
        let count: [u8; 8] = bytes.as_slice().try_into().map_err(|_| {
            self.corrupt(name, format!("its entry count holds {} bytes", bytes.len()))
        })?;
        Ok(Some(u64::from_be_bytes(count)))
    }

    /// Voids view `name` (checkpoint, marker, manifest, earlier whole form) in one
    /// durable batch, then removes its entries and chunks in batches.
    fn clear(&self, name: ViewName) -> Result<(), ProjectionError> {
        let view = name.as_str();
        let mut batch = kv::Batch::default();
        for key in [
            checkpoint_key(view),
            marker_key(view),
            body::manifest_key(view),
            count_key(view),
            view.to_owned(),
        ] {
            batch.remove(key.as_bytes());
        }
        self.kv.apply(batch, true)?;
        for prefix in [
            entries::prefix(view),
            format!("{view}.c.").into_bytes(),
            format!("{view}.m.").into_bytes(),
        ] {
            // Keys first, then removal in transactions of at most 10,000 keys.
            let mut keys = Vec::new();
            self.kv.scan_prefix(&prefix, |key, _| {
                keys.push(key.to_vec());
                Ok(ControlFlow::Continue(()))
            })?;
            for group in keys.chunks(10_000) {
                let mut batch = kv::Batch::default();
                for key in group {
                    batch.remove(key);
                }
                self.write(batch)?;
            }
        }
        Ok(())
    }

    /// The stored view and the epochs it was folded from, if any.
    pub fn load<V: View>(&self) -> Result<Option<(V, Epochs)>, ProjectionError> {
        Ok(self.load_stored::<V>()?.map(|l| (l.view, l.epochs)))
    }

    /// The stored view, the epochs it was folded from and whether it is in this
    /// version's form; `None` when nothing (or a void view) is stored.
    pub fn load_stored<V: View>(&self) -> Result<Option<Loaded<V>>, ProjectionError> {
        self.load_keeping::<V>(usize::MAX)
    }

    /// [`load_stored`](Self::load_stored) for a runner that keeps `keep_hot` entries
    /// in memory: the view takes its entries one at a time and lets go of the older
    /// ones as it reads ([`View::restorer`]), so a large store is never held whole —
    /// neither its bytes nor its decoded entries.
    pub fn load_keeping<V: View>(
        &self,
        keep_hot: usize,
    ) -> Result<Option<Loaded<V>>, ProjectionError> {
        let name = V::NAME;
        let view = name.as_str();
        if self.get(marker_key(view).as_bytes())?.is_some() {
            let head = self
                .read_body(name)?
                .ok_or_else(|| self.corrupt(name, "its head is missing".into()))?;
            let position = self
                .checkpoint(name)?
                .ok_or_else(|| self.corrupt(name, "its checkpoint is missing".into()))?;
            let decoding = |e: StoredError| self.corrupt(name, e.to_string());
            let mut restorer = V::restorer(&head, keep_hot).map_err(decoding)?;
            let mut read = 0u64;
            self.each_entry(name, |(key, value)| {
                read += 1;
                restorer.entry(key, value).map_err(decoding)?;
                Ok(ControlFlow::Continue(()))
            })?;
            let count = self.entry_count(name)?.unwrap_or(0);
            if read != count {
                return Err(self.corrupt(name, format!("{read} entries stored, {count} written")));
            }
            let restored = restorer.finish().map_err(decoding)?;
            if restored.checkpoint() != &position.checkpoint {
                return Err(self.corrupt(name, "its head and checkpoint disagree".into()));
            }
            return Ok(Some(Loaded {
                view: restored,
                epochs: position.epochs,
                current: true,
            }));
        }
        // Earlier forms: the whole view with its epochs, chunked or under its name.
        let bytes = match self.read_body(name)? {
            Some(body) => body,
            None => match self.get(view.as_bytes())? {
                Some(whole) => whole,
                None => return Ok(None),
            },
        };
        let decoded = if bytes.first() == Some(&b'{') {
            // JSON, as stored before views were MessagePack (whose top-level array
            // never starts with this byte).
            serde_json::from_slice::<Stored<V>>(&bytes).map_err(|e| e.to_string())
        } else {
            rmp_serde::from_slice::<Stored<V>>(&bytes).map_err(|e| e.to_string())
        };
        let stored = decoded.map_err(|reason| self.corrupt(name, reason))?;
        Ok(Some(Loaded {
            view: stored.view,
            epochs: stored.epochs,
            current: false,
        }))
    }

    /// Entry `key` of view `name` as its last commit stored it (a value a view let go
    /// of, e.g. a packet of the thread view); `None` when it is not stored.
    pub fn entry(&self, name: ViewName, key: &[u8]) -> Result<Option<Vec<u8>>, ProjectionError> {
        entries::read(name.as_str(), key, |k| {
            self.get(k).map_err(EntryRead::Store)
        })
        .map_err(|e| match e {
            EntryRead::Store(e) => e,
            EntryRead::Parts(reason) => self.corrupt(name, reason),
        })
    }

    /// Entry `key` that view `name` let go of: it must be stored (the view lets go
    /// only of what a commit confirmed), so a missing one is a corrupt store.
    pub(super) fn let_go_entry(
        &self,
        name: ViewName,
        key: &[u8],
    ) -> Result<Vec<u8>, ProjectionError> {
        self.entry(name, key)?.ok_or_else(|| {
            self.corrupt(
                name,
                format!("entry {key:?} the view let go of is not stored"),
            )
        })
    }

    /// The stored checkpoint of view `name`, without reading the view.
    pub fn checkpoint(&self, name: ViewName) -> Result<Option<StoredCheckpoint>, ProjectionError> {
        let Some(bytes) = self.get(checkpoint_key(name.as_str()).as_bytes())? else {
            return Ok(None);
        };
        #[derive(Deserialize)]
        struct Owned {
            epochs: BTreeMap<Stream, String>,
            view: Checkpoint,
        }
        let owned: Owned =
            serde_json::from_slice(&bytes).map_err(|e| self.corrupt(name, e.to_string()))?;
        Ok(Some(StoredCheckpoint {
            epochs: owned.epochs,
            checkpoint: owned.view,
        }))
    }

    /// What view `name` takes in the store: the bytes of its keys and values (entries,
    /// chunks, manifest, checkpoint; a view stored whole by an earlier version
    /// included), how many keys hold them and how many entries it has. Reads keys only
    /// under the view's prefix.
    pub fn usage(&self, name: ViewName) -> Result<StoreUsage, ProjectionError> {
        let view = name.as_str();
        let entry_prefix = entries::prefix(view);
        let mut usage = StoreUsage::default();
        let mut count = |k: &[u8], v: &[u8]| {
            usage.bytes += (k.len() + v.len()) as u64;
            usage.keys += 1;
            // Each entry has exactly one part 0, its last two key bytes zero.
            if k.starts_with(&entry_prefix) && k.ends_with(&[0, 0]) {
                usage.entries += 1;
            }
        };
        if let Some(whole) = self.get(view.as_bytes())? {
            count(view.as_bytes(), &whole);
        }
        self.kv.scan_prefix(format!("{view}.").as_bytes(), |k, v| {
            count(k, v);
            Ok(ControlFlow::Continue(()))
        })?;
        Ok(usage)
    }

    /// The store's file on disk: live pages and the free pages later commits reuse
    /// (compare with the sum of [`ViewStore::usage`]).
    pub fn size_on_disk(&self) -> Result<u64, ProjectionError> {
        self.kv.size_on_disk()
    }

    /// Removes view `name`, its entries and its checkpoint (durably).
    pub fn remove(&self, name: ViewName) -> Result<(), ProjectionError> {
        self.clear(name)?;
        self.flush()
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, ProjectionError> {
        self.kv.get(key)
    }

    /// Applies `batch` atomically (not yet durable: see [`flush`](Self::flush)).
    fn write(&self, batch: kv::Batch) -> Result<(), ProjectionError> {
        self.kv.apply(batch, false)
    }

    /// Makes every write so far durable.
    fn flush(&self) -> Result<(), ProjectionError> {
        self.kv.flush()
    }

    /// A corrupt-store error naming this store and view `view`.
    pub(super) fn corrupt(&self, view: ViewName, reason: String) -> ProjectionError {
        ProjectionError::Corrupt {
            path: self.path.display().to_string(),
            view,
            reason,
        }
    }

    fn error(&self, reason: String) -> ProjectionError {
        ProjectionError::Store {
            path: self.path.display().to_string(),
            reason,
        }
    }
}
