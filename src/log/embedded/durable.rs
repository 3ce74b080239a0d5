//! A flush that is durable: sled's, then an `fdatasync` of what sled wrote.
//!
//! sled 0.34's `Db::flush` writes its buffers and, on Linux, calls only
//! `sync_file_range(WAIT_BEFORE | WRITE | WAIT_AFTER)` on its data file (`<dir>/db`;
//! `pagecache/iobuf.rs`). That call starts and waits for the write-out of those pages
//! and nothing else: it flushes no drive cache and writes no metadata, such as the
//! file's size as it grows (see `sync_file_range(2)`: "there are no guarantees that the
//! data will be available after a crash"). Values larger than a quarter of a segment
//! (~128 KiB) go to a file of their own under `<dir>/blobs/`, which sled writes
//! without any sync at all. So an event acknowledged after sled's flush survives the
//! process being killed (the page cache holds it), but not necessarily a power loss or
//! a crash of the machine. `strace` of a running `up` under `fsync: every_append` showed
//! `sync_file_range` on the log's file and no `fsync`/`fdatasync` of it.
//!
//! [`DurableFlush::flush`] therefore follows sled's flush with an `fdatasync` of the
//! data file (the drive cache and the size are flushed too), and an `fdatasync` of
//! every blob file not synced before, plus an `fsync` of the blob directory so their
//! names survive as well. Only then is a group answered under `every_append`.

use std::collections::HashSet;
use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

/// Flushes a sled database so that what it holds survives a crash of the machine.
pub(super) struct DurableFlush {
    /// sled's data file, opened for writing (an `fdatasync` needs no more than an open
    /// descriptor on Linux, but other systems refuse one opened read-only).
    data: File,
    /// `<dir>/blobs`, where sled writes large values one file each.
    blobs: PathBuf,
    /// Blob files already synced (pruned of files sled has removed).
    synced: HashSet<OsString>,
}

/// What one [`DurableFlush::flush`] synced beyond sled's own flush.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Synced {
    /// Blob files synced now (0 in the common case: no value was large).
    pub blobs: usize,
}

impl DurableFlush {
    /// Opens the data file of the sled database in `dir` (after sled opened it, so
    /// it exists). Blob files present now are synced by the first flush.
    pub(super) fn open(dir: &Path) -> io::Result<Self> {
        let data = std::fs::OpenOptions::new()
            .write(true)
            .open(dir.join("db"))?;
        Ok(DurableFlush {
            data,
            blobs: dir.join("blobs"),
            synced: HashSet::new(),
        })
    }

    /// sled's flush, then the syncs the module docs describe.
    pub(super) fn flush(&mut self, db: &sled::Db) -> Result<Synced, sled::Error> {
        db.flush()?;
        self.data.sync_data()?;
        let blobs = self.sync_blobs()?;
        Ok(Synced { blobs })
    }

    /// Syncs the blob files not synced yet, and then their directory; how many.
    fn sync_blobs(&mut self) -> io::Result<usize> {
        let entries = match std::fs::read_dir(&self.blobs) {
            Ok(entries) => entries,
            // sled creates the directory with the database; none means no blob.
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(e),
        };
        let mut present = HashSet::new();
        let mut fresh = 0;
        for entry in entries {
            let entry = entry?;
            let name = entry.file_name();
            if !self.synced.contains(&name) {
                match std::fs::OpenOptions::new().write(true).open(entry.path()) {
                    Ok(file) => file.sync_data()?,
                    // Removed by sled's own clean-up since the listing: nothing to keep.
                    Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                    Err(e) => return Err(e),
                }
                fresh += 1;
            }
            present.insert(name);
        }
        if fresh > 0 {
            File::open(&self.blobs)?.sync_all()?;
        }
        self.synced = present;
        Ok(fresh)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // ISSUE-15
    #[test]
    fn a_flush_syncs_each_blob_file_once_and_forgets_the_removed() {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = sled::Config::new()
            .path(dir.path())
            .flush_every_ms(None)
            .open()
            .expect("open sled");
        let mut durable = DurableFlush::open(dir.path()).expect("data file");
        let tree = db.open_tree("t").expect("tree");
        tree.insert("small", vec![7u8; 100]).expect("insert");
        assert_eq!(durable.flush(&db).expect("flush"), Synced { blobs: 0 });
        // Larger than a segment's blob threshold: sled stores it as a file of its own.
        tree.insert("large", vec![9u8; 300 * 1024]).expect("insert");
        assert_eq!(durable.flush(&db).expect("flush"), Synced { blobs: 1 });
        let blob_files = std::fs::read_dir(dir.path().join("blobs"))
            .expect("blob dir")
            .count();
        assert_eq!(blob_files, 1, "sled wrote the large value as a blob");
        assert_eq!(durable.flush(&db).expect("flush"), Synced { blobs: 0 });
        tree.insert("large2", vec![8u8; 300 * 1024])
            .expect("insert");
        assert_eq!(durable.flush(&db).expect("flush"), Synced { blobs: 1 });
        // What sled removes is forgotten, so the set does not grow with history.
        for entry in std::fs::read_dir(dir.path().join("blobs")).expect("blob dir") {
            std::fs::remove_file(entry.expect("entry").path()).expect("remove");
        }
        assert_eq!(durable.flush(&db).expect("flush"), Synced { blobs: 0 });
        assert!(durable.synced.is_empty());
    }

    // ISSUE-15
    #[test]
    fn a_database_without_its_data_file_is_refused() {
        let dir = tempfile::tempdir().expect("temp dir");
        assert!(DurableFlush::open(dir.path()).is_err());
    }
}
