//! The group-commit writer: one thread owns every append to one sled database.
//!
//! Appenders do not touch sled themselves. They send their entries to the writer thread
//! and wait for its answer. The thread takes the first pending request, drains every
//! other request already queued behind it (up to [`MAX_GROUP_EVENTS`]), assigns each
//! request contiguous sequences per stream, writes the whole group atomically — one sled
//! batch when it touches one stream, one sled transaction across the streams' trees
//! when it touches several (so a request spanning streams, [`Writer::append_streams`],
//! is stored whole or not at all) — applies the [`FsyncPolicy`] once for the group,
//! publishes the new stream ends to tails and only then answers every request of the
//! group. While it flushes, new requests
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
use sled::transaction::{ConflictableTransactionError, TransactionError};
use sled::Transactional;
use tokio::sync::{oneshot, watch};

use super::durable::DurableFlush;
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

/// Entries of one stream, in order.
pub(super) type StreamEntries = (Stream, Vec<(String, Vec<u8>)>);

enum Request {
    Append {
        stream: Stream,
        entries: Vec<(String, Vec<u8>)>,
        reply: oneshot::Sender<Result<u64, LogError>>,
    },
    /// Several streams' entries, stored together or not at all; answered with each
    /// part's first sequence.
    AppendStreams {
        parts: Vec<StreamEntries>,
        reply: oneshot::Sender<Result<Vec<u64>, LogError>>,
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
        durable: DurableFlush,
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
                        durable,
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

    /// Appends every part (a stream's entries, in order; each stream at most once) in
    /// one atomic write: all parts are stored, or none. Returns each part's first
    /// sequence, in order.
    pub(super) async fn append_streams(
        &self,
        parts: Vec<StreamEntries>,
    ) -> Result<Vec<u64>, LogError> {
        let (reply, answer) = oneshot::channel();
        self.send(Request::AppendStreams { parts, reply })?;
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

/// Where an append of the current group waits for its answer.
enum Reply {
    One(oneshot::Sender<Result<u64, LogError>>),
    Streams(oneshot::Sender<Result<Vec<u64>, LogError>>),
}

/// An append of the current group, waiting for its answer: the first sequence of each
/// of its parts.
struct Pending {
    firsts: Vec<u64>,
    reply: Reply,
}

/// The writer thread's state.
struct GroupCommit {
    db: sled::Db,
    /// sled's flush made durable (`durable.rs`): every flush goes through it.
    durable: DurableFlush,
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
            if let Err(e) = self.durable.flush(&self.db) {
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
        self.durable.flush(&self.db)?;
        self.unflushed = 0;
        self.dirty_since = None;
        Ok(())
    }

    /// Assigns `entries` the next sequences of `stream` and adds them to the group's
    /// batch of that stream, in blocks ([`record`]); the first sequence, or why the
    /// stream cannot be written.
    fn stage(
        &mut self,
        batches: &mut HashMap<Stream, (sled::Batch, u64)>,
        stored_at_ms: i64,
        stream: Stream,
        entries: &[(String, Vec<u8>)],
    ) -> Result<u64, LogError> {
        let slot = self.streams.get_mut(&stream).ok_or_else(|| {
            LogError::Task(format!(
                "stream {stream} has no tree in {}",
                self.path.display()
            ))
        })?;
        let (batch, _) = batches
            .entry(stream)
            .or_insert_with(|| (sled::Batch::default(), slot.next));
        let first = slot.next;
        let mut at = 0usize;
        for size in record::block_sizes(entries) {
            let block = &entries[at..at + size];
            batch.insert(
                &(first + at as u64).to_be_bytes(),
                record::encode_block(
                    stored_at_ms,
                    block.iter().map(|(k, v)| (k.as_str(), v.as_slice())),
                ),
            );
            at += size;
        }
        slot.next += entries.len() as u64;
        Ok(first)
    }

    /// Writes the group's batches atomically: one batch alone, several in one
    /// transaction across their trees. On failure nothing was written and every
    /// stream's next sequence is back where the group found it.
    fn write(&mut self, batches: HashMap<Stream, (sled::Batch, u64)>) -> Result<(), sled::Error> {
        let firsts: Vec<(Stream, u64)> = batches.iter().map(|(s, (_, f))| (*s, *f)).collect();
        let mut parts: Vec<(&sled::Tree, sled::Batch)> = batches
            .into_iter()
            .filter_map(|(stream, (batch, _))| {
                self.streams.get(&stream).map(|slot| (&slot.tree, batch))
            })
            .collect();
        let written = if parts.len() <= 1 {
            match parts.pop() {
                Some((tree, batch)) => tree.apply_batch(batch),
                None => Ok(()),
            }
        } else {
            let trees: Vec<&sled::Tree> = parts.iter().map(|(tree, _)| *tree).collect();
            trees
                .as_slice()
                .transaction(|views| {
                    for (view, (_, batch)) in views.iter().zip(&parts) {
                        view.apply_batch(batch)?;
                    }
                    Ok::<(), ConflictableTransactionError<()>>(())
                })
                .map_err(|e| match e {
                    TransactionError::Storage(e) => e,
                    TransactionError::Abort(()) => {
                        sled::Error::Unsupported("the append transaction aborted".into())
                    }
                })
        };
        if written.is_err() {
            for (stream, first) in firsts {
                if let Some(slot) = self.streams.get_mut(&stream) {
                    slot.next = first;
                }
            }
        }
        written
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
                } => match self.stage(&mut batches, stored_at_ms, stream, &entries) {
                    Ok(first) => {
                        written += entries.len() as u64;
                        appends.push(Pending {
                            firsts: vec![first],
                            reply: Reply::One(reply),
                        });
                    }
                    Err(e) => {
                        let _ = reply.send(Err(e));
                    }
                },
                Request::AppendStreams { parts, reply } => {
                    // Every part's stream must exist before any is staged: a part that
                    // cannot be written fails the request without touching the group.
                    if let Some((stream, _)) =
                        parts.iter().find(|(s, _)| !self.streams.contains_key(s))
                    {
                        let _ = reply.send(Err(LogError::Task(format!(
                            "stream {stream} has no tree in {}",
                            self.path.display()
                        ))));
                        continue;
                    }
                    let mut firsts = Vec::with_capacity(parts.len());
                    for (stream, entries) in &parts {
                        if let Ok(first) = self.stage(&mut batches, stored_at_ms, *stream, entries)
                        {
                            firsts.push(first);
                            written += entries.len() as u64;
                        }
                    }
                    appends.push(Pending {
                        firsts,
                        reply: Reply::Streams(reply),
                    });
                }
                Request::Flush { reply } => flushes.push(reply),
            }
        }
        let failed = self.write(batches).err();
        if failed.is_some() {
            written = 0;
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
        // Appenders first, tails after: the writer that waits for this answer is the
        // one hop every command's reply crosses (the kernel's writer, and behind it the
        // next batch), while the tails' folds can follow. Woken in the other order, the
        // runtime ran every tail's fold of the group before the writer on this answer,
        // and every lone send waited for them.
        for pending in appends {
            let answer = match (&failed, &flushed) {
                (Some(e), _) => Err(LogError::sled(&self.path, e.clone())),
                (None, Err(e)) if self.policy_waits_for_flush() => {
                    Err(LogError::sled(&self.path, e.clone()))
                }
                (None, _) => Ok(pending.firsts),
            };
            // An appender that stopped waiting needs no answer.
            match pending.reply {
                Reply::One(reply) => {
                    let _ = reply.send(answer.map(|firsts| firsts.first().copied().unwrap_or(0)));
                }
                Reply::Streams(reply) => {
                    let _ = reply.send(answer);
                }
            }
        }
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
            Request::AppendStreams { parts, .. } => {
                parts.iter().map(|(_, e)| e.len()).sum::<usize>().max(1)
            }
            Request::Flush { .. } => 1,
        })
        .sum()
}
