//! The group-commit writer: one thread owns every append to one sled database.
//!
//! Appenders do not touch sled themselves. They send their entries to the writer thread
//! and wait for its answer. The thread takes the first pending request, drains every
//! other request already queued behind it (up to [`MAX_GROUP_EVENTS`]), assigns each
//! request contiguous sequences, writes the whole group as one sled batch per stream,
//! applies the [`FsyncPolicy`] once for the group, publishes the new stream ends to tails
//! and only then answers every request of the group. While it flushes, new requests
//! queue up and form the next group, so the more appenders wait, the more of them share
//! one fsync — throughput grows with concurrency instead of being capped at one fsync
//! per append.
//!
//! The policy decides when a group waits for the disk:
//! - `every_append`: every group is flushed before any of its appends is answered, and
//!   tails see its events only after the flush (no reader acts on an event a crash could
//!   take back).
//! - `every_n:N`: a group is flushed (and answered after the flush) once N events have
//!   been written since the last flush; tails see events as soon as they are written.
//! - `every_ms:T`: the thread flushes T ms after the first unflushed write, between
//!   groups; appends are answered once written.
//!
//! [`Writer::flush`] queues a flush behind every append sent before it, whatever the
//! policy. Dropping the [`Writer`] stops the thread after it has finished (and, under
//! any policy, flushed) the requests already sent, and waits for it, so the database is
//! closed — and its directory lock released — when the log is dropped.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use orchestrata_schemas::events::Stream;
use tokio::sync::{oneshot, watch};

use super::{now_ms, record};
use crate::log::config::FsyncPolicy;
use crate::log::LogError;

/// The most events one group writes before the thread flushes and answers. Bounds the
/// latency a huge queue adds to the first appender of a group.
const MAX_GROUP_EVENTS: usize = 16_384;

/// One stream as the writer sees it.
pub(super) struct StreamSlot {
    /// The stream's tree.
    pub(super) tree: sled::Tree,
    /// The sequence the next append gets.
    pub(super) next: u64,
    /// The sequence the next append gets, as far as tails may know (see the module docs).
    pub(super) visible: Arc<watch::Sender<u64>>,
}

enum Request {
    Append {
        stream: Stream,
        entries: Vec<(String, Vec<u8>)>,
        reply: oneshot::Sender<Result<u64, LogError>>,
    },
    Flush {
        reply: oneshot::Sender<Result<(), LogError>>,
    },
}

/// The handle appenders use; owns the writer thread.
pub(super) struct Writer {
    path: PathBuf,
    requests: Option<Sender<Request>>,
    thread: Option<JoinHandle<()>>,
}

impl Writer {
    /// Starts the writer thread of `db` with the streams' trees and next sequences.
    pub(super) fn start(
        db: sled::Db,
        path: PathBuf,
        policy: FsyncPolicy,
        streams: HashMap<Stream, StreamSlot>,
    ) -> Result<Self, LogError> {
        let (requests, queue) = mpsc::channel();
        let thread = {
            let path = path.clone();
            std::thread::Builder::new()
                .name("orchestrata-sled-writer".into())
                .spawn(move || {
                    GroupCommit {
                        db,
                        path,
                        policy,
                        streams,
                        unflushed: 0,
                        dirty_since: None,
                    }
                    .run(queue)
                })
                .map_err(|e| LogError::Task(format!("cannot start the sled writer thread: {e}")))?
        };
        Ok(Writer {
            path,
            requests: Some(requests),
            thread: Some(thread),
        })
    }

    fn stopped(&self) -> LogError {
        LogError::Task(format!(
            "the sled writer thread of {} stopped",
            self.path.display()
        ))
    }

    fn send(&self, request: Request) -> Result<(), LogError> {
        self.requests
            .as_ref()
            .ok_or_else(|| self.stopped())?
            .send(request)
            .map_err(|_| self.stopped())
    }

    /// Appends `entries` to `stream` in one group; returns the first sequence once the
    /// policy is satisfied.
    pub(super) async fn append(
        &self,
        stream: Stream,
        entries: Vec<(String, Vec<u8>)>,
    ) -> Result<u64, LogError> {
        let (reply, answer) = oneshot::channel();
        self.send(Request::Append {
            stream,
            entries,
            reply,
        })?;
        answer.await.map_err(|_| self.stopped())?
    }

    /// Flushes everything written so far (and every append sent before this call).
    pub(super) async fn flush(&self) -> Result<(), LogError> {
        let (reply, answer) = oneshot::channel();
        self.send(Request::Flush { reply })?;
        answer.await.map_err(|_| self.stopped())?
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        // Closing the channel ends the thread once it has drained what was sent.
        drop(self.requests.take());
        if let Some(thread) = self.thread.take() {
            if thread.join().is_err() {
                tracing::error!(path = %self.path.display(), "the sled writer thread panicked");
            }
        }
    }
}

/// An append of the current group, waiting for its answer.
struct Pending {
    stream: Stream,
    first: u64,
    reply: oneshot::Sender<Result<u64, LogError>>,
    /// Set when its stream's batch could not be written.
    failed: Option<sled::Error>,
}

/// The writer thread's state.
struct GroupCommit {
    db: sled::Db,
    path: PathBuf,
    policy: FsyncPolicy,
    streams: HashMap<Stream, StreamSlot>,
    /// Events written since the last flush.
    unflushed: u64,
    /// When the oldest unflushed write happened (drives `every_ms`).
    dirty_since: Option<Instant>,
}

impl GroupCommit {
    fn run(mut self, queue: Receiver<Request>) {
        while let Some(first) = self.next_request(&queue) {
            let mut group = vec![first];
            let mut events = group_events(&group);
            while events < MAX_GROUP_EVENTS {
                match queue.try_recv() {
                    Ok(request) => {
                        events += group_events(std::slice::from_ref(&request));
                        group.push(request);
                    }
                    Err(_) => break,
                }
            }
            self.commit(group);
        }
        if self.unflushed > 0 {
            if let Err(e) = self.db.flush() {
                tracing::error!(path = %self.path.display(), error = %e, "final sled flush failed");
            }
        }
    }

    /// Blocks for the next request; under `every_ms` flushes when the interval of the
    /// oldest unflushed write ends first. `None` once every sender is gone.
    fn next_request(&mut self, queue: &Receiver<Request>) -> Option<Request> {
        loop {
            let deadline = match (self.policy, self.dirty_since) {
                (FsyncPolicy::EveryMs(ms), Some(since)) => since + Duration::from_millis(ms),
                _ => return queue.recv().ok(),
            };
            match queue.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(request) => return Some(request),
                Err(RecvTimeoutError::Timeout) => {
                    if let Err(e) = self.flush() {
                        tracing::error!(path = %self.path.display(), error = %e, "periodic sled flush failed");
                    }
                }
                Err(RecvTimeoutError::Disconnected) => return None,
            }
        }
    }

    fn flush(&mut self) -> Result<(), sled::Error> {
        self.db.flush()?;
        self.unflushed = 0;
        self.dirty_since = None;
        Ok(())
    }

    /// Writes, flushes (as the policy says) and answers one group.
    fn commit(&mut self, group: Vec<Request>) {
        let stored_at_ms = now_ms();
        let mut batches: HashMap<Stream, (sled::Batch, u64)> = HashMap::new();
        let mut appends = Vec::with_capacity(group.len());
        let mut flushes = Vec::new();
        let mut written = 0u64;
        for request in group {
            match request {
                Request::Append {
                    stream,
                    entries,
                    reply,
                } => {
                    let Some(slot) = self.streams.get_mut(&stream) else {
                        let _ = reply.send(Err(LogError::Task(format!(
                            "stream {stream} has no tree in {}",
                            self.path.display()
                        ))));
                        continue;
                    };
                    let (batch, _) = batches
                        .entry(stream)
                        .or_insert_with(|| (sled::Batch::default(), slot.next));
                    let first = slot.next;
                    for (i, (key, value)) in entries.iter().enumerate() {
                        batch.insert(
                            &(first + i as u64).to_be_bytes(),
                            record::encode_value(stored_at_ms, key, value),
                        );
                    }
                    slot.next += entries.len() as u64;
                    written += entries.len() as u64;
                    appends.push(Pending {
                        stream,
                        first,
                        reply,
                        failed: None,
                    });
                }
                Request::Flush { reply } => flushes.push(reply),
            }
        }
        for (stream, (batch, first)) in batches {
            let Some(slot) = self.streams.get_mut(&stream) else {
                continue;
            };
            if let Err(e) = slot.tree.apply_batch(batch) {
                // The batch is atomic: none of it was written, so its sequences are free.
                let count = slot.next - first;
                slot.next = first;
                written -= count;
                for pending in appends.iter_mut().filter(|p| p.stream == stream) {
                    pending.failed = Some(e.clone());
                }
            }
        }
        if written > 0 {
            self.unflushed += written;
            self.dirty_since.get_or_insert_with(Instant::now);
        }
        let must_flush = !flushes.is_empty()
            || match self.policy {
                FsyncPolicy::EveryAppend => written > 0,
                FsyncPolicy::EveryN(n) => self.unflushed >= n,
                FsyncPolicy::EveryMs(_) => false,
            };
        let flushed = if must_flush { self.flush() } else { Ok(()) };
        let visible_now = !matches!(self.policy, FsyncPolicy::EveryAppend) || flushed.is_ok();
        if visible_now {
            for slot in self.streams.values() {
                slot.visible.send_if_modified(|end| {
                    let moved = slot.next > *end;
                    if moved {
                        *end = slot.next;
                    }
                    moved
                });
            }
        }
        for pending in appends {
            let answer = match (pending.failed, &flushed) {
                (Some(e), _) => Err(LogError::sled(&self.path, e)),
                (None, Err(e)) if self.policy_waits_for_flush() => {
                    Err(LogError::sled(&self.path, e.clone()))
                }
                (None, _) => Ok(pending.first),
            };
            // An appender that stopped waiting needs no answer.
            let _ = pending.reply.send(answer);
        }
        for reply in flushes {
            let _ = reply.send(
                flushed
                    .as_ref()
                    .map(|_| ())
                    .map_err(|e| LogError::sled(&self.path, e.clone())),
            );
        }
    }

    /// Whether an append of a flushed group is answered only after the flush succeeded.
    fn policy_waits_for_flush(&self) -> bool {
        !matches!(self.policy, FsyncPolicy::EveryMs(_))
    }
}

/// How many events the requests carry (a flush counts as one).
fn group_events(requests: &[Request]) -> usize {
    requests
        .iter()
        .map(|r| match r {
            Request::Append { entries, .. } => entries.len().max(1),
            Request::Flush { .. } => 1,
        })
        .sum()
}
