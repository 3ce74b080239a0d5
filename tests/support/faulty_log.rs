//! [`FaultyLog`]: a real [`EventLog`] whose appends and reads fail on demand.
//!
//! It wraps a real log (sled in a temp dir in the kernel tests) and forwards every
//! call to it, except that
//! - an append to a stream marked with [`FaultyLog::fail_appends`] fails, storing
//!   nothing (the wrapped log is never called), until [`FaultyLog::heal_appends`];
//! - while [`FaultyLog::fail_reads`] is on, `read`, `bounds`, `epoch` and `tail` fail;
//! - `append_streams` (several streams in one write) is as atomic as the real log's
//!   (sled: all or nothing, so one failing stream fails the whole write), unless
//!   [`FaultyLog::per_stream`] made it write stream by stream, as a log without
//!   atomic multi-stream appends (Kafka) does.
//!
//! Nothing else is simulated: what an append stores and what a read returns is what
//! the real log does. Failures are injected as a sled I/O error, the error a full or
//! broken disk gives.
#![allow(dead_code)]

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use orchestrata::log::{Bounds, EnvelopeStream, EventLog, LogError};
use orchestrata_schemas::events::{Envelope, EventRecord, Stream};

/// See the module docs. Clone the `Arc` to keep a handle for switching faults while
/// the kernel holds the log as `Arc<dyn EventLog>`.
pub struct FaultyLog {
    inner: Arc<dyn EventLog>,
    failing: Mutex<HashSet<Stream>>,
    reads_fail: AtomicBool,
    refused_appends: AtomicU64,
    refused_reads: AtomicU64,
    appends: AtomicU64,
    single_appends: AtomicU64,
    per_stream: AtomicBool,
}

impl FaultyLog {
    /// Wraps `inner` with no fault switched on.
    pub fn new(inner: Arc<dyn EventLog>) -> Arc<FaultyLog> {
        Arc::new(FaultyLog {
            inner,
            failing: Mutex::new(HashSet::new()),
            reads_fail: AtomicBool::new(false),
            refused_appends: AtomicU64::new(0),
            refused_reads: AtomicU64::new(0),
            appends: AtomicU64::new(0),
            single_appends: AtomicU64::new(0),
            per_stream: AtomicBool::new(false),
        })
    }

    /// Multi-stream appends go stream by stream from now on (each stream's batch can
    /// fail on its own), as on a log without atomic multi-stream appends.
    pub fn per_stream(&self) {
        self.per_stream.store(true, Ordering::SeqCst);
    }

    /// The real log underneath (reads through it never fail).
    pub fn inner(&self) -> &Arc<dyn EventLog> {
        &self.inner
    }

    /// Appends to `stream` fail from now on.
    pub fn fail_appends(&self, stream: Stream) {
        self.set().insert(stream);
    }

    /// Appends to every stream fail from now on.
    pub fn fail_all_appends(&self) {
        self.set().extend(Stream::ALL);
    }

    /// Appends to `stream` succeed again.
    pub fn heal_appends(&self, stream: Stream) {
        self.set().remove(&stream);
    }

    /// Reads fail (`on`) or succeed again.
    pub fn fail_reads(&self, on: bool) {
        self.reads_fail.store(on, Ordering::SeqCst);
    }

    /// Every fault off.
    pub fn heal(&self) {
        self.set().clear();
        self.fail_reads(false);
    }

    /// How many appends were refused so far.
    pub fn refused_appends(&self) -> u64 {
        self.refused_appends.load(Ordering::SeqCst)
    }

    /// How many append calls (`append`, `append_batch` — one per stream batch — or
    /// `append_streams`, one per multi-stream write) reached the real log so far.
    pub fn appends(&self) -> u64 {
        self.appends.load(Ordering::SeqCst)
    }

    /// How many one-record `append` calls reached the real log so far: the path of a
    /// component appending on its own, which the kernel's writer never takes (it
    /// writes whole batches with `append_streams`).
    pub fn single_appends(&self) -> u64 {
        self.single_appends.load(Ordering::SeqCst)
    }

    /// How many reads were refused so far.
    pub fn refused_reads(&self) -> u64 {
        self.refused_reads.load(Ordering::SeqCst)
    }

    fn set(&self) -> std::sync::MutexGuard<'_, HashSet<Stream>> {
        self.failing.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn injected(&self, what: String) -> LogError {
        LogError::Sled {
            path: self.inner.location(),
            source: sled::Error::Io(std::io::Error::other(format!("injected fault: {what}"))),
        }
    }

    fn check_append(&self, stream: Stream) -> Result<(), LogError> {
        if self.set().contains(&stream) {
            self.refused_appends.fetch_add(1, Ordering::SeqCst);
            return Err(self.injected(format!("append to {stream}")));
        }
        Ok(())
    }

    fn check_read(&self, stream: Stream) -> Result<(), LogError> {
        if self.reads_fail.load(Ordering::SeqCst) {
            self.refused_reads.fetch_add(1, Ordering::SeqCst);
            return Err(self.injected(format!("read of {stream}")));
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl EventLog for FaultyLog {
    async fn append(&self, record: &EventRecord) -> Result<u64, LogError> {
        self.check_append(record.stream())?;
        self.appends.fetch_add(1, Ordering::SeqCst);
        self.single_appends.fetch_add(1, Ordering::SeqCst);
        self.inner.append(record).await
    }

    async fn append_batch(&self, records: &[EventRecord]) -> Result<u64, LogError> {
        if let Some(head) = records.first() {
            self.check_append(head.stream())?;
        }
        self.appends.fetch_add(1, Ordering::SeqCst);
        self.inner.append_batch(records).await
    }

    fn atomic_streams(&self) -> bool {
        !self.per_stream.load(Ordering::SeqCst) && self.inner.atomic_streams()
    }

    async fn append_streams(&self, records: &[EventRecord]) -> Result<Vec<u64>, LogError> {
        if !self.atomic_streams() {
            // Stream by stream through this wrapper, each batch failing on its own.
            return orchestrata::log::append_stream_by_stream(self, records).await;
        }
        for record in records {
            self.check_append(record.stream())?;
        }
        self.appends.fetch_add(1, Ordering::SeqCst);
        self.inner.append_streams(records).await
    }

    async fn read(
        &self,
        stream: Stream,
        from: u64,
        to: Option<u64>,
        limit: usize,
    ) -> Result<Vec<Envelope>, LogError> {
        self.check_read(stream)?;
        self.inner.read(stream, from, to, limit).await
    }

    async fn bounds(&self, stream: Stream) -> Result<Bounds, LogError> {
        self.check_read(stream)?;
        self.inner.bounds(stream).await
    }

    async fn epoch(&self, stream: Stream) -> Result<String, LogError> {
        self.check_read(stream)?;
        self.inner.epoch(stream).await
    }

    async fn tail(&self, stream: Stream, from: u64) -> Result<EnvelopeStream, LogError> {
        self.check_read(stream)?;
        self.inner.tail(stream, from).await
    }

    async fn enforce_retention(&self, stream: Stream) -> Result<Option<u64>, LogError> {
        self.inner.enforce_retention(stream).await
    }

    async fn flush(&self) -> Result<(), LogError> {
        self.inner.flush().await
    }

    fn location(&self) -> String {
        format!("faulty({})", self.inner.location())
    }
}
