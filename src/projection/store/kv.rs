//! The view store's key-value file: one redb table of byte keys and byte values.
//!
//! Why redb and not sled (which the log keeps): a live server commits its views every
//! second or so, rewriting recently touched entries. sled 0.34 keeps the pages such
//! writes leave behind in memory far past its cache bound, so its heap grows with every
//! send. redb is a copy-on-write B-tree whose page cache is a hard
//! bound ([`Builder::set_cache_size`]), which reuses the pages a commit frees (so the
//! file follows the live data without a stop), and whose commits are atomic: all of a
//! batch or none of it.

use std::ops::ControlFlow;
use std::path::Path;
use std::sync::Arc;

use redb::backends::InMemoryBackend;
use redb::{Builder, Database, Durability, ReadableDatabase, TableDefinition};

use crate::projection::ProjectionError;

const TABLE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("views");

/// The file in the views directory that holds the store.
pub(super) const FILE_NAME: &str = "views.redb";

/// What sled (the view store of earlier versions) kept in the views directory. Views
/// are derived from the log, so an earlier store is removed and its views are folded
/// again from the log at the first start.
const SLED_FILES: [&str; 3] = ["conf", "db", "blobs"];

/// One write: the keys to set and the keys to remove, applied in order.
#[derive(Default)]
pub(super) struct Batch {
    ops: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

impl Batch {
    /// Sets `key` to `value`.
    pub(super) fn insert(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        self.ops
            .push((key.as_ref().to_vec(), Some(value.as_ref().to_vec())));
    }

    /// Removes `key` (nothing when it is absent).
    pub(super) fn remove(&mut self, key: impl AsRef<[u8]>) {
        self.ops.push((key.as_ref().to_vec(), None));
    }
}

/// The store's database: cheap to clone (one open file shared).
#[derive(Clone)]
pub(super) struct Kv {
    db: Arc<Database>,
    /// The database file; `None` in memory. Paths are shared, not copied: the store
    /// is cloned for every request's views and every read opens a reader.
    file: Option<Arc<Path>>,
    /// The views directory (or `<memory>`), for errors.
    path: Arc<Path>,
}

impl Kv {
    /// Opens (creating) the store in directory `dir` with a page cache of
    /// `cache_bytes`. An earlier version's sled store in `dir` is removed first.
    pub(super) fn open(dir: &Path, cache_bytes: u64) -> Result<Self, ProjectionError> {
        let path: Arc<Path> = Arc::from(dir);
        let fail = |reason: String| ProjectionError::Store {
            path: path.display().to_string(),
            reason,
        };
        std::fs::create_dir_all(dir).map_err(|e| fail(format!("creating the directory: {e}")))?;
        let file = dir.join(FILE_NAME);
        if !file.exists() {
            remove_sled_store(dir).map_err(fail)?;
        }
        let cache = usize::try_from(cache_bytes).unwrap_or(usize::MAX);
        let shown = file.display().to_string();
        let last_tenth = std::cell::Cell::new(-1i64);
        let db = Builder::new()
            .set_cache_size(cache)
            // A store not closed cleanly (a crash, SIGKILL) is checked and repaired at
            // open, in time that grows with the file: say so, with progress.
            .set_repair_callback(move |session| {
                let tenth = (session.progress() * 10.0) as i64;
                if tenth != last_tenth.replace(tenth) {
                    tracing::info!(
                        file = %shown,
                        progress = format!("{}%", tenth * 10),
                        "repairing the view store after an unclean stop"
                    );
                }
            })
            .create(&file)
            .map_err(|e| error(&path, e.into()))?;
        Ok(Kv {
            db: Arc::new(db),
            file: Some(Arc::from(file)),
            path,
        })
    }

    /// A store in memory only, gone when the last clone is dropped.
    pub(super) fn temporary() -> Result<Self, ProjectionError> {
        let path: Arc<Path> = Arc::from(Path::new("<memory>"));
        let db = Builder::new()
            .create_with_backend(InMemoryBackend::new())
            .map_err(|e| error(&path, e.into()))?;
        Ok(Kv {
            db: Arc::new(db),
            file: None,
            path,
        })
    }

    /// The value stored under `key`.
    pub(super) fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, ProjectionError> {
        self.reader()?.get(key)
    }

    /// A snapshot of the store for many reads (one read transaction, not one per key:
    /// a commit looks up each entry it replaces).
    pub(super) fn reader(&self) -> Result<Reader, ProjectionError> {
        let fail = |e: redb::Error| error(&self.path, e);
        let txn = self.db.begin_read().map_err(|e| fail(e.into()))?;
        let table = match txn.open_table(TABLE) {
            Ok(table) => Some(table),
            Err(redb::TableError::TableDoesNotExist(_)) => None,
            Err(e) => return Err(fail(e.into())),
        };
        Ok(Reader {
            table,
            path: self.path.clone(),
        })
    }

    /// Calls `f` with each key starting with `prefix` and its value, in key order, from
    /// one consistent snapshot; stops at `f`'s first error.
    pub(super) fn scan_prefix(
        &self,
        prefix: &[u8],
        mut f: impl FnMut(&[u8], &[u8]) -> Result<ControlFlow<()>, ProjectionError>,
    ) -> Result<(), ProjectionError> {
        let fail = |e: redb::Error| error(&self.path, e);
        let txn = self.db.begin_read().map_err(|e| fail(e.into()))?;
        let table = match txn.open_table(TABLE) {
            Ok(table) => table,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(()),
            Err(e) => return Err(fail(e.into())),
        };
        for item in table.range(prefix..).map_err(|e| fail(e.into()))? {
            let (key, value) = item.map_err(|e| fail(e.into()))?;
            if !key.value().starts_with(prefix) {
                break;
            }
            if f(key.value(), value.value())?.is_break() {
                break;
            }
        }
        Ok(())
    }

    /// Applies `batch` atomically. Durable when it returns if `durable`; otherwise it
    /// becomes durable with the next durable write ([`Kv::flush`]), and a crash before
    /// that loses it whole (never part of it).
    pub(super) fn apply(&self, batch: Batch, durable: bool) -> Result<(), ProjectionError> {
        let fail = |e: redb::Error| error(&self.path, e);
        let mut txn = self.db.begin_write().map_err(|e| fail(e.into()))?;
        if !durable {
            txn.set_durability(Durability::None)
                .map_err(|e| fail(e.into()))?;
        }
        {
            let mut table = txn.open_table(TABLE).map_err(|e| fail(e.into()))?;
            for (key, value) in batch.ops {
                match value {
                    Some(value) => {
                        table
                            .insert(key.as_slice(), value.as_slice())
                            .map_err(|e| fail(e.into()))?;
                    }
                    None => {
                        table.remove(key.as_slice()).map_err(|e| fail(e.into()))?;
                    }
                }
            }
        }
        txn.commit().map_err(|e| fail(e.into()))
    }

    /// Makes every write so far durable.
    pub(super) fn flush(&self) -> Result<(), ProjectionError> {
        self.apply(Batch::default(), true)
    }

    /// The size of the database file (0 in memory): live pages and pages a later
    /// commit will reuse.
    pub(super) fn size_on_disk(&self) -> Result<u64, ProjectionError> {
        match &self.file {
            Some(file) => {
                std::fs::metadata(file)
                    .map(|m| m.len())
                    .map_err(|e| ProjectionError::Store {
                        path: self.path.display().to_string(),
                        reason: format!("reading the size of {}: {e}", file.display()),
                    })
            }
            None => Ok(0),
        }
    }
}

/// One consistent snapshot of the store ([`Kv::reader`]); writes made after it was
/// taken are not seen. Keep it short-lived: while a snapshot is open, the pages later
/// commits supersede cannot be reused, and the file grows with every write
/// (`tests/view_store_file.rs` checks the reuse with no snapshot held open).
pub(super) struct Reader {
    /// `None` before the first write created the table.
    table: Option<redb::ReadOnlyTable<&'static [u8], &'static [u8]>>,
    path: Arc<Path>,
}

impl Reader {
    /// The value stored under `key` in this snapshot.
    pub(super) fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, ProjectionError> {
        let Some(table) = &self.table else {
            return Ok(None);
        };
        let value = table.get(key).map_err(|e| error(&self.path, e.into()))?;
        Ok(value.map(|v| v.value().to_vec()))
    }
}

/// Removes the files an earlier version's sled view store left in `dir`.
fn remove_sled_store(dir: &Path) -> Result<(), String> {
    for name in SLED_FILES {
        let path = dir.join(name);
        let removed = if path.is_dir() {
            std::fs::remove_dir_all(&path)
        } else if path.exists() {
            std::fs::remove_file(&path)
        } else {
            continue;
        };
        removed.map_err(|e| format!("removing the earlier view store's {name}: {e}"))?;
        tracing::info!(
            file = %path.display(),
            "removed a view store of an earlier version; views are folded again from the log"
        );
    }
    let entries = std::fs::read_dir(dir).map_err(|e| format!("reading the directory: {e}"))?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        if name.to_string_lossy().starts_with("snap.") {
            std::fs::remove_file(entry.path())
                .map_err(|e| format!("removing the earlier view store's snapshot: {e}"))?;
        }
    }
    Ok(())
}

fn error(path: &Path, e: redb::Error) -> ProjectionError {
    let reason = match e {
        redb::Error::DatabaseAlreadyOpen => {
            "locked by another process (is an orchestrata runner using it?)".to_owned()
        }
        other => other.to_string(),
    };
    ProjectionError::Store {
        path: path.display().to_string(),
        reason,
    }
}
