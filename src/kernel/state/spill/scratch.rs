//! [`Scratch`]: the on-disk half of a [`SpillTable`](super::SpillTable), a redb table in
//! an unlinked file, keyed by the entry's key bytes.
//!
//! Why a B-tree and not an append-only file with an offset per key in memory: the
//! offsets would be kept for every entry ever spilled, so the kernel's memory would
//! still follow the history. The tree keeps nothing per entry
//! in memory beyond its bounded page cache, reuses the pages of entries that came back
//! into memory (no compaction pass), and answers "is there an entry?" for a key it has
//! never seen from its own pages.
//!
//! Commits are durable as redb counts it, through a backend whose sync returns at once
//! ([`Unsynced`]: no fsync): the file is unlinked scratch space that no later process
//! reads, so a crash loses nothing the log does not have, and redb's bookkeeping of
//! non-durable commits (which grew with every page ever written) never starts.

use std::fs::File;
use std::path::Path;

use redb::{Builder, Database, ReadableDatabase, TableDefinition};

use super::unsynced::Unsynced;

/// The one table: key bytes to encoded value.
const TABLE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("spilled");

/// Page cache of one scratch table. Cold reads are rare (a late acknowledgement, a
/// duplicate check that misses); the operating system caches the file besides.
pub const SCRATCH_CACHE_BYTES: usize = 8 << 20;

/// One pending change: `Some(bytes)` puts the entry, `None` removes it.
pub type Change<'a> = (&'a [u8], Option<&'a [u8]>);

/// The scratch table; see the module docs.
pub struct Scratch {
    db: Database,
    /// The same unlinked file, to read its size.
    file: File,
}

impl std::fmt::Debug for Scratch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Scratch")
    }
}

impl Scratch {
    /// Creates the table in a new unlinked file under `dir`.
    pub fn create(dir: &Path) -> Result<Self, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let file: File =
            tempfile::tempfile_in(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let handle = file
            .try_clone()
            .map_err(|e| format!("{}: {e}", dir.display()))?;
        let backend = Unsynced::new(file).map_err(|e| format!("{}: {e}", dir.display()))?;
        let db = Builder::new()
            .set_cache_size(SCRATCH_CACHE_BYTES)
            .create_with_backend(backend)
            .map_err(|e| format!("{}: {e}", dir.display()))?;
        let scratch = Scratch { db, file: handle };
        // The table exists from the start, so readers never meet "no such table".
        scratch.apply(std::iter::empty())?;
        Ok(scratch)
    }

    /// The value stored under `key`.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, String> {
        let txn = self.db.begin_read().map_err(|e| e.to_string())?;
        let table = txn.open_table(TABLE).map_err(|e| e.to_string())?;
        let value = table.get(key).map_err(|e| e.to_string())?;
        Ok(value.map(|v| v.value().to_vec()))
    }

    /// The file's size: live pages and the free pages later commits reuse.
    pub fn size_on_disk(&self) -> Result<u64, String> {
        self.file
            .metadata()
            .map(|m| m.len())
            .map_err(|e| e.to_string())
    }

    /// Another handle on the unlinked file (tests read what a commit wrote).
    #[cfg(test)]
    pub fn file(&self) -> std::io::Result<File> {
        self.file.try_clone()
    }

    /// Applies `changes` in one transaction: all of them or none.
    pub fn apply<'a>(&self, changes: impl Iterator<Item = Change<'a>>) -> Result<(), String> {
        let fail = |e: redb::Error| e.to_string();
        let txn = self.db.begin_write().map_err(|e| fail(e.into()))?;
        {
            let mut table = txn.open_table(TABLE).map_err(|e| fail(e.into()))?;
            for (key, value) in changes {
                match value {
                    Some(value) => {
                        table.insert(key, value).map_err(|e| fail(e.into()))?;
                    }
                    None => {
                        table.remove(key).map_err(|e| fail(e.into()))?;
                    }
                }
            }
        }
        txn.commit().map_err(|e| fail(e.into()))
    }

    /// Every `(key, value)` stored, in key order, from one snapshot; an error ends the
    /// walk (after one error line).
    pub fn entries(&self) -> impl Iterator<Item = (Vec<u8>, Vec<u8>)> {
        let range = self
            .db
            .begin_read()
            .map_err(redb::Error::from)
            .and_then(|txn| txn.open_table(TABLE).map_err(redb::Error::from))
            .and_then(|table| table.range::<&[u8]>(..).map_err(redb::Error::from));
        let range = match range {
            Ok(range) => Some(range),
            Err(error) => {
                tracing::error!(%error, "the kernel could not read its spilled entries");
                None
            }
        };
        range.into_iter().flatten().map_while(|item| match item {
            Ok((k, v)) => Some((k.value().to_vec(), v.value().to_vec())),
            Err(error) => {
                tracing::error!(%error, "the kernel could not read its spilled entries");
                None
            }
        })
    }
}
