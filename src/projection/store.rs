//! [`ViewStore`]: views and their checkpoints in a sled database of their own.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use orchestrata_projections::{Checkpoint, View, ViewName};
use orchestrata_schemas::events::Stream;
use serde::{Deserialize, Serialize};

use super::chunks::{self, ChunkId};
use super::ProjectionError;
use crate::config::{Backend, LogConfig, DEFAULT_SLED_CACHE_BYTES};

/// The largest value the store writes (view chunks, manifest pages).
///
/// sled 0.34 writes any page larger than a quarter of its 512 KiB segment to a blob
/// file of its own, and an I/O error while writing a blob leaves the log buffer with a
/// writer that never leaves, so every later flush of that database waits forever (seen:
/// a view store's last commit racing the removal of its directory hung a test run until
/// CI's time ran out; a full disk does the same). A leaf page holds at most 17 entries,
/// so values of 4 KiB keep every page well inside the segment and off the blob path.
pub const PART_BYTES: usize = 4096;

/// A stored view's chunk ids, in order, and how many pages hold them.
#[derive(Default)]
struct Manifest {
    ids: Vec<ChunkId>,
    pages: u32,
}

fn page_key(name: &str, index: u32) -> String {
    format!("{name}.m.{index:08}")
}

fn chunk_key(name: &str, id: &ChunkId) -> String {
    format!("{name}.c.{}", hex(id))
}

fn hex(id: &ChunkId) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

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
    /// Keys (chunks, manifest pages, manifest, checkpoint).
    pub keys: u64,
}

#[derive(Serialize)]
struct StoredRef<'a, V> {
    epochs: &'a BTreeMap<Stream, String>,
    view: &'a V,
}

#[derive(Deserialize)]
struct Stored<V> {
    epochs: BTreeMap<Stream, String>,
    view: V,
}

/// The store: one sled tree; for each view, written together in one atomic batch: the
/// view (epochs + the view as MessagePack) cut by content into chunks of at most 4 KiB,
/// each under `<name>.c.<id>` (`id`: its hash), the list of chunk ids (the manifest) in
/// pages under `<name>.m.<i>` with their count in `<name>.manifest`, and
/// `<name>.checkpoint` (epochs + checkpoint as JSON, so status reads are cheap). A
/// commit writes only chunks not stored yet and removes those the view no longer has.
/// Views stored by earlier versions (whole under `<name>`) are still
/// read, and replaced at their next save.
///
/// Views are stored as MessagePack in serde's compact (not human-readable) form: the
/// same encoding choices as the Avro log (timestamps as microseconds, JSON payloads as
/// their text), so a view read back equals, byte for byte, the one folded from the log.
/// It is several times smaller and faster to write than JSON, which matters for the
/// thread view (every packet of the log). Views stored as JSON by earlier versions are
/// still read.
#[derive(Clone)]
pub struct ViewStore {
    tree: sled::Tree,
    db: sled::Db,
    path: PathBuf,
}

impl ViewStore {
    /// Opens (creating) the store in `dir` with the default page cache
    /// ([`DEFAULT_SLED_CACHE_BYTES`]). Fails if another process holds it.
    pub fn open(dir: impl AsRef<Path>) -> Result<Self, ProjectionError> {
        Self::open_with_cache(dir, DEFAULT_SLED_CACHE_BYTES)
    }

    /// Opens (creating) the store in `dir`; sled's page cache takes at most
    /// `cache_bytes`. Fails if another process holds it.
    pub fn open_with_cache(
        dir: impl AsRef<Path>,
        cache_bytes: u64,
    ) -> Result<Self, ProjectionError> {
        let path = dir.as_ref().to_path_buf();
        let db = sled::Config::new()
            .path(&path)
            .cache_capacity(cache_bytes)
            .flush_every_ms(None)
            .open()
            .map_err(|e| store_error(&path, e))?;
        let tree = db.open_tree("views").map_err(|e| store_error(&path, e))?;
        Ok(ViewStore { tree, db, path })
    }

    /// A store that lives in memory only and is gone when dropped: for processes that
    /// keep views to answer reads but are not the projector of record (a split
    /// deployment's gateways), which rebuild them from the log at every start.
    pub fn temporary() -> Result<Self, ProjectionError> {
        let path = PathBuf::from("<memory>");
        let db = sled::Config::new()
            .temporary(true)
            .flush_every_ms(None)
            .open()
            .map_err(|e| store_error(&path, e))?;
        let tree = db.open_tree("views").map_err(|e| store_error(&path, e))?;
        Ok(ViewStore { tree, db, path })
    }

    /// The store's directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `view` with its checkpoint and `epochs` in one atomic, durable write.
    ///
    /// Only the chunks of the encoded view that are not stored yet are written, and
    /// the chunks it no longer has are removed (see [`chunks`](super::chunks)): a
    /// commit after a few events writes a few chunks and the manifest, whatever the
    /// size of the view.
    pub fn save<V: View>(
        &self,
        view: &V,
        epochs: &BTreeMap<Stream, String>,
    ) -> Result<(), ProjectionError> {
        let name = V::NAME.as_str();
        let body = rmp_serde::to_vec(&StoredRef { epochs, view })
            .map_err(|e| self.error(format!("encoding view {name}: {e}")))?;
        let checkpoint = serde_json::to_vec(&StoredRef {
            epochs,
            view: view.checkpoint(),
        })
        .map_err(|e| self.error(format!("encoding checkpoint of {name}: {e}")))?;
        let ranges = chunks::cut(&body);
        let ids: Vec<ChunkId> = ranges
            .iter()
            .map(|r| chunks::id(&body[r.clone()]))
            .collect();
        let old = self.manifest(V::NAME)?.unwrap_or_default();
        let stored: HashSet<ChunkId> = old.ids.into_iter().collect();
        let kept: HashSet<ChunkId> = ids.iter().copied().collect();
        let mut batch = sled::Batch::default();
        let mut written = HashSet::new();
        for (range, id) in ranges.into_iter().zip(&ids) {
            if !stored.contains(id) && written.insert(*id) {
                batch.insert(chunk_key(name, id).as_bytes(), &body[range]);
            }
        }
        for gone in stored.difference(&kept) {
            batch.remove(chunk_key(name, gone).as_bytes());
        }
        let manifest: Vec<u8> = ids.concat();
        let mut pages = 0u32;
        for page in manifest.chunks(PART_BYTES) {
            batch.insert(page_key(name, pages).as_bytes(), page);
            pages += 1;
        }
        for gone in pages..old.pages {
            batch.remove(page_key(name, gone).as_bytes());
        }
        batch.insert(format!("{name}.manifest").as_bytes(), &pages.to_be_bytes());
        // The format of earlier versions: the view whole under its name.
        batch.remove(name.as_bytes());
        batch.insert(format!("{name}.checkpoint").as_bytes(), checkpoint);
        self.apply(batch)
    }

    /// The stored view and the epochs it was folded from, if any.
    pub fn load<V: View>(&self) -> Result<Option<(V, Epochs)>, ProjectionError> {
        let name = V::NAME.as_str();
        let bytes = if let Some(manifest) = self.manifest(V::NAME)? {
            let mut body = Vec::with_capacity(manifest.ids.len() * 2048);
            for id in &manifest.ids {
                let chunk = self
                    .tree
                    .get(chunk_key(name, id))
                    .map_err(|e| store_error(&self.path, e))?
                    .ok_or_else(|| {
                        self.corrupt(V::NAME, format!("chunk {} is missing", hex(id)))
                    })?;
                body.extend_from_slice(&chunk);
            }
            body
        } else {
            match self
                .tree
                .get(name)
                .map_err(|e| store_error(&self.path, e))?
            {
                Some(whole) => whole.to_vec(),
                None => return Ok(None),
            }
        };
        let decoded = if bytes.first() == Some(&b'{') {
            // JSON, as stored before views were MessagePack (whose top-level array
            // never starts with this byte).
            serde_json::from_slice::<Stored<V>>(&bytes).map_err(|e| e.to_string())
        } else {
            rmp_serde::from_slice::<Stored<V>>(&bytes).map_err(|e| e.to_string())
        };
        let stored = decoded.map_err(|reason| self.corrupt(V::NAME, reason))?;
        Ok(Some((stored.view, stored.epochs)))
    }

    /// The manifest of view `name`; `None` when it has none.
    fn manifest(&self, name: ViewName) -> Result<Option<Manifest>, ProjectionError> {
        let Some(pages) = self.count(&format!("{name}.manifest"), name)? else {
            return Ok(None);
        };
        let mut bytes = Vec::new();
        for i in 0..pages {
            let page = self
                .tree
                .get(page_key(name.as_str(), i))
                .map_err(|e| store_error(&self.path, e))?
                .ok_or_else(|| {
                    self.corrupt(name, format!("manifest page {i} of {pages} is missing"))
                })?;
            bytes.extend_from_slice(&page);
        }
        let (ids, rest) = bytes.as_chunks::<16>();
        if !rest.is_empty() {
            return Err(self.corrupt(name, format!("a manifest of {} bytes", bytes.len())));
        }
        Ok(Some(Manifest {
            ids: ids.to_vec(),
            pages,
        }))
    }

    /// A stored `u32` count under `key`.
    fn count(&self, key: &str, view: ViewName) -> Result<Option<u32>, ProjectionError> {
        let Some(bytes) = self.tree.get(key).map_err(|e| store_error(&self.path, e))? else {
            return Ok(None);
        };
        let count: [u8; 4] = bytes
            .as_ref()
            .try_into()
            .map_err(|_| self.corrupt(view, format!("{key} holds {} bytes", bytes.len())))?;
        Ok(Some(u32::from_be_bytes(count)))
    }

    /// Applies `batch` atomically and flushes it to disk.
    fn apply(&self, batch: sled::Batch) -> Result<(), ProjectionError> {
        self.tree
            .apply_batch(batch)
            .map_err(|e| store_error(&self.path, e))?;
        self.db.flush().map_err(|e| store_error(&self.path, e))?;
        Ok(())
    }

    fn corrupt(&self, view: ViewName, reason: String) -> ProjectionError {
        ProjectionError::Corrupt {
            path: self.path.display().to_string(),
            view,
            reason,
        }
    }

    /// The stored checkpoint of view `name`, without reading the view.
    pub fn checkpoint(&self, name: ViewName) -> Result<Option<StoredCheckpoint>, ProjectionError> {
        let key = format!("{name}.checkpoint");
        let Some(bytes) = self.tree.get(key).map_err(|e| store_error(&self.path, e))? else {
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

    /// What view `name` takes in the store: the bytes of its keys and values (chunks,
    /// manifest, checkpoint; a view stored whole by an earlier version included) and
    /// how many keys hold them. Reads keys only under the view's prefix.
    pub fn usage(&self, name: ViewName) -> Result<StoreUsage, ProjectionError> {
        let view = name.as_str();
        let mut usage = StoreUsage::default();
        let mut count = |k: &[u8], v: &[u8]| {
            usage.bytes += (k.len() + v.len()) as u64;
            usage.keys += 1;
        };
        if let Some(whole) = self
            .tree
            .get(view)
            .map_err(|e| store_error(&self.path, e))?
        {
            count(view.as_bytes(), &whole);
        }
        for entry in self.tree.scan_prefix(format!("{view}.")) {
            let (k, v) = entry.map_err(|e| store_error(&self.path, e))?;
            count(&k, &v);
        }
        Ok(usage)
    }

    /// The store's files on disk, superseded pages sled has not reclaimed yet included
    /// (compare with the sum of [`ViewStore::usage`]).
    pub fn size_on_disk(&self) -> Result<u64, ProjectionError> {
        self.db
            .size_on_disk()
            .map_err(|e| store_error(&self.path, e))
    }

    /// Removes view `name` and its checkpoint (atomically, durably).
    pub fn remove(&self, name: ViewName) -> Result<(), ProjectionError> {
        let view = name.as_str();
        let mut batch = sled::Batch::default();
        let manifest = self.manifest(name)?.unwrap_or_default();
        for id in &manifest.ids {
            batch.remove(chunk_key(view, id).as_bytes());
        }
        for i in 0..manifest.pages {
            batch.remove(page_key(view, i).as_bytes());
        }
        for key in [
            format!("{view}.manifest"),
            view.to_owned(),
            format!("{view}.checkpoint"),
        ] {
            batch.remove(key.as_bytes());
        }
        self.apply(batch)
    }

    fn error(&self, reason: String) -> ProjectionError {
        ProjectionError::Store {
            path: self.path.display().to_string(),
            reason,
        }
    }
}

fn store_error(path: &Path, e: sled::Error) -> ProjectionError {
    let reason = match &e {
        sled::Error::Io(io) if io.to_string().contains("could not acquire lock") => {
            format!("locked by another process (is an orchestrata runner using it?): {io}")
        }
        other => other.to_string(),
    };
    ProjectionError::Store {
        path: path.display().to_string(),
        reason,
    }
}
