//! [`Unsynced`]: a redb file backend that never waits for the disk.
//!
//! Why the scratch table commits durably through it, and not with `Durability::None`:
//! redb keeps, in memory, every page a non-durable commit allocated (its "unpersisted"
//! set) and holds back the pages such commits freed, both until the next durable
//! commit. The scratch table never had one, so both followed the history: a hash set
//! entry per page ever written (~34 bytes a `cxp.send` in the heap, issue 18) and a file
//! that grew where it could have reused freed pages. A durable commit clears both, and
//! what makes it durable is `sync_data`; the scratch file is unlinked, so no process
//! reads it after a crash, and a sync that returns at once loses nothing.

use std::fs::File;
use std::io;
use std::ops::Bound;

use redb::backends::FileBackend;
use redb::{BackendError, DatabaseError, StorageBackend};

/// A [`FileBackend`] whose [`sync_data`](StorageBackend::sync_data) returns at once;
/// every other call is the file backend's.
#[derive(Debug)]
pub struct Unsynced(FileBackend);

impl Unsynced {
    /// Wraps `file` (see the module docs for why it must be scratch space).
    pub fn new(file: File) -> Result<Self, DatabaseError> {
        FileBackend::new(file).map(Unsynced)
    }
}

impl StorageBackend for Unsynced {
    fn len(&self) -> Result<u64, io::Error> {
        self.0.len()
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), io::Error> {
        self.0.read(offset, out)
    }

    fn set_len(&self, len: u64) -> Result<(), io::Error> {
        self.0.set_len(len)
    }

    fn sync_data(&self) -> Result<(), io::Error> {
        Ok(())
    }

    fn write(&self, offset: u64, data: &[u8]) -> Result<(), io::Error> {
        self.0.write(offset, data)
    }

    fn close(&self) -> Result<(), io::Error> {
        self.0.close()
    }

    fn try_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.0.try_lock_range(start, end)
    }

    fn try_lock_shared_range(
        &self,
        start: Bound<u64>,
        end: Bound<u64>,
    ) -> Result<bool, BackendError> {
        self.0.try_lock_shared_range(start, end)
    }

    fn lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.0.lock_range(start, end)
    }

    fn lock_shared_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.0.lock_shared_range(start, end)
    }

    fn unlock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.0.unlock_range(start, end)
    }

    fn query_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.0.query_lock_range(start, end)
    }
}
