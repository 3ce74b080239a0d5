//! The embedded backend (sled): one sled database in a directory, one tree per stream.
//!
//! - Tree keys are big-endian u64 sequences; the value under a key holds the entry at
//!   that sequence and, in a block, the ones after it ([`record`]).
//! - The epoch is a UUID created with the database and stored in its `__meta` tree.
//! - Every append goes through one writer thread that assigns sequences, writes whole
//!   groups of concurrent appends atomically (one batch, or one transaction across the
//!   trees when the group spans streams) and flushes once per group as the
//!   [`FsyncPolicy`](crate::log::config::FsyncPolicy) says ([`writer`]).
//! - Retention deletes the oldest keys; the newest event of a stream is always kept, so
//!   the next sequence can be recovered from the tree after a restart.

mod durable;
mod record;
mod writer;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use orchestrata_schemas::events::Stream;
use tokio::sync::watch;

use self::writer::{StreamSlot, Writer};
use super::raw::{Bounds, RawEntry, RawLog, RawRef, TailFeed, Visit};
use super::LogError;
use crate::log::config::{FsyncPolicy, RetentionPolicy};

const META_TREE: &str = "__meta";
const EPOCH_KEY: &str = "epoch";

struct StreamState {
    tree: sled::Tree,
    /// The next sequence a tail may read (appended and, under `every_append`, flushed);
    /// the writer thread moves it.
    visible: Arc<watch::Sender<u64>>,
}

struct Inner {
    path: PathBuf,
    epoch: String,
    streams: HashMap<Stream, StreamState>,
    writer: Writer,
    retention: HashMap<Stream, RetentionPolicy>,
}

/// What [`SledLog::scan`] calls with each entry, borrowed from sled's pages.
type ScanVisit<'v> = dyn FnMut(RawRef<'_>) -> Result<(), LogError> + 'v;

/// The sled-backed log. Cheap to clone; all clones share one database.
#[derive(Clone)]
pub struct SledLog {
    inner: Arc<Inner>,
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

impl SledLog {
    /// Opens (or creates) the database in `dir`. Fails with
    /// [`LogError::Locked`] if another process holds it. Starts the database's writer
    /// thread; dropping the last clone of the log stops it and closes the database.
    ///
    /// `cache_bytes` bounds sled's page cache (sled's own default is 1 GiB).
    pub async fn open(
        dir: &Path,
        fsync: FsyncPolicy,
        retention: impl IntoIterator<Item = (Stream, RetentionPolicy)>,
        cache_bytes: u64,
    ) -> Result<Self, LogError> {
        let path = dir.to_path_buf();
        let opened = {
            let path = path.clone();
            tokio::task::spawn_blocking(move || {
                sled::Config::new()
                    .path(&path)
                    .cache_capacity(cache_bytes)
                    .flush_every_ms(None)
                    .open()
            })
            .await
            .map_err(|e| LogError::Task(format!("sled open task: {e}")))?
        };
        let db = opened.map_err(|e| LogError::sled(&path, e))?;
        let sled_err = |e| LogError::sled(&path, e);
        let meta = db.open_tree(META_TREE).map_err(sled_err)?;
        let epoch = match meta.get(EPOCH_KEY).map_err(sled_err)? {
            Some(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            None => {
                let epoch = uuid::Uuid::new_v4().to_string();
                meta.insert(EPOCH_KEY, epoch.as_bytes()).map_err(sled_err)?;
                epoch
            }
        };
        // The epoch just written, if new, and whatever an earlier process left unsynced.
        let mut durable =
            durable::DurableFlush::open(&path).map_err(|e| LogError::sled(&path, e.into()))?;
        durable.flush(&db).map_err(sled_err)?;
        let mut streams = HashMap::new();
        let mut slots = HashMap::new();
        for stream in Stream::ALL {
            let tree = db.open_tree(stream.as_str()).map_err(sled_err)?;
            let next = match last_of(stream, &tree, &path)? {
                Some(last) => last + 1,
                None => 0,
            };
            let visible = Arc::new(watch::channel(next).0);
            slots.insert(
                stream,
                StreamSlot {
                    tree: tree.clone(),
                    next,
                    visible: visible.clone(),
                },
            );
            streams.insert(stream, StreamState { tree, visible });
        }
        let writer = Writer::start(db, durable, path.clone(), fsync, slots)?;
        Ok(SledLog {
            inner: Arc::new(Inner {
                path,
                epoch,
                streams,
                writer,
                retention: retention.into_iter().collect(),
            }),
        })
    }

    fn state(&self, stream: Stream) -> &StreamState {
        // Every stream of Stream::ALL gets a tree at open.
        &self.inner.streams[&stream]
    }

    fn err(&self, e: sled::Error) -> LogError {
        LogError::sled(&self.inner.path, e)
    }

    /// Hands the sequence and stored value of each entry of `from..=to` (at most
    /// `limit`) to `visit` straight from sled's pages; returns how many. Checks the range
    /// like [`RawLog::read_raw`] promises.
    fn scan(
        &self,
        stream: Stream,
        from: u64,
        to: Option<u64>,
        limit: usize,
        visit: &mut ScanVisit<'_>,
    ) -> Result<usize, LogError> {
        if let Some(to) = to {
            if from > to {
                return Err(LogError::InvalidRange { stream, from, to });
            }
        }
        if let Some(first) = self.first(stream)? {
            if from < first {
                return Err(LogError::Truncated {
                    stream,
                    requested: from,
                    first,
                });
            }
        }
        if limit == 0 {
            return Ok(0);
        }
        let tree = &self.state(stream).tree;
        let start = self.block_holding(tree, from)?;
        let iter = match to {
            Some(to) => tree.range(start..=sled::IVec::from(&to.to_be_bytes())),
            None => tree.range(start..),
        };
        let mut count = 0;
        for item in iter {
            let (key, value) = item.map_err(|e| self.err(e))?;
            let first = record::decode_sequence(stream, &key)?;
            for entry in record::decode_value(stream, first, &value)? {
                if entry.sequence < from {
                    continue;
                }
                if to.is_some_and(|to| entry.sequence > to) {
                    return Ok(count);
                }
                // Retention may have removed keys between the bound check and the
                // scan: a range that does not start at `from` would hide a gap, so
                // report it as truncated.
                if count == 0 && entry.sequence != from {
                    return Err(LogError::Truncated {
                        stream,
                        requested: from,
                        first: entry.sequence,
                    });
                }
                visit(entry)?;
                count += 1;
                if count == limit {
                    return Ok(count);
                }
            }
        }
        Ok(count)
    }

    /// The key to start a range at so that it begins with `sequence`'s entry: the key of
    /// the block holding it (at or before it), or `sequence` itself if none is stored.
    fn block_holding(&self, tree: &sled::Tree, sequence: u64) -> Result<sled::IVec, LogError> {
        match tree.range(..=sequence.to_be_bytes()).next_back() {
            Some(item) => Ok(item.map_err(|e| self.err(e))?.0),
            None => Ok(sled::IVec::from(&sequence.to_be_bytes())),
        }
    }

    fn first(&self, stream: Stream) -> Result<Option<u64>, LogError> {
        match self.state(stream).tree.first().map_err(|e| self.err(e))? {
            Some((key, _)) => Ok(Some(record::decode_sequence(stream, &key)?)),
            None => Ok(None),
        }
    }
}

#[async_trait::async_trait]
impl RawLog for SledLog {
    async fn append_raw(
        &self,
        stream: Stream,
        entries: Vec<(String, Vec<u8>)>,
    ) -> Result<u64, LogError> {
        self.inner.writer.append(stream, entries).await
    }

    fn atomic_streams(&self) -> bool {
        true
    }

    async fn append_raw_streams(
        &self,
        parts: Vec<(Stream, Vec<(String, Vec<u8>)>)>,
    ) -> Result<Vec<u64>, LogError> {
        self.inner.writer.append_streams(parts).await
    }

    async fn read_raw(
        &self,
        stream: Stream,
        from: u64,
        to: Option<u64>,
        limit: usize,
    ) -> Result<Vec<RawEntry>, LogError> {
        let mut out = Vec::with_capacity(limit.min(4096));
        self.scan(stream, from, to, limit, &mut |entry| {
            out.push(entry.to_entry());
            Ok(())
        })?;
        Ok(out)
    }

    async fn read_each(
        &self,
        stream: Stream,
        from: u64,
        to: Option<u64>,
        limit: usize,
        visit: &mut Visit<'_>,
    ) -> Result<usize, LogError> {
        self.scan(stream, from, to, limit, &mut |entry| visit(entry))
    }

    async fn bounds(&self, stream: Stream) -> Result<Bounds, LogError> {
        let first = self.first(stream)?;
        let last = last_of(stream, &self.state(stream).tree, &self.inner.path)?;
        Ok(Bounds { first, last })
    }

    async fn epoch(&self, _stream: Stream) -> Result<String, LogError> {
        Ok(self.inner.epoch.clone())
    }

    async fn tail_feed(&self, stream: Stream, from: u64) -> Result<TailFeed, LogError> {
        let visible = self.state(stream).visible.subscribe();
        if let Some(first) = self.first(stream)? {
            if from < first {
                return Err(LogError::Truncated {
                    stream,
                    requested: from,
                    first,
                });
            }
        }
        Ok(TailFeed {
            log: Arc::new(self.clone()),
            visible,
        })
    }

    async fn enforce_retention(&self, stream: Stream) -> Result<Option<u64>, LogError> {
        let Some(policy) = self.inner.retention.get(&stream).copied() else {
            return self.first(stream);
        };
        let bounds = self.bounds(stream).await?;
        let (Some(first), Some(last)) = (bounds.first, bounds.last) else {
            return Ok(None);
        };
        let mut keep_from = first;
        if let Some(max) = policy.max_events {
            keep_from = keep_from.max((last + 1).saturating_sub(max.max(1)));
        }
        let tree = &self.state(stream).tree;
        if let Some(age) = policy.max_age() {
            let cutoff =
                now_ms().saturating_sub(i64::try_from(age.as_millis()).unwrap_or(i64::MAX));
            // Entries stored before the cutoff go, except the newest of the stream.
            let from = self.block_holding(tree, keep_from)?;
            'blocks: for item in tree.range(from..) {
                let (key, value) = item.map_err(|e| self.err(e))?;
                let start = record::decode_sequence(stream, &key)?;
                for entry in record::decode_value(stream, start, &value)? {
                    if entry.sequence < keep_from {
                        continue;
                    }
                    if entry.sequence >= last || entry.stored_at_ms >= cutoff {
                        break 'blocks;
                    }
                    keep_from = entry.sequence + 1;
                }
            }
        }
        if keep_from > first {
            let mut batch = sled::Batch::default();
            for item in tree.range(..keep_from.to_be_bytes()) {
                let (key, value) = item.map_err(|e| self.err(e))?;
                let start = record::decode_sequence(stream, &key)?;
                batch.remove(key);
                // A block reaching past `keep_from` keeps its tail, under `keep_from`
                // (a block's entries share one stored time).
                let kept: Vec<_> = record::decode_value(stream, start, &value)?
                    .into_iter()
                    .filter(|e| e.sequence >= keep_from)
                    .collect();
                if let Some(head) = kept.first() {
                    batch.insert(
                        &keep_from.to_be_bytes(),
                        record::encode_block(
                            head.stored_at_ms,
                            kept.iter().map(|e| (e.key, e.value)),
                        ),
                    );
                }
            }
            tree.apply_batch(batch).map_err(|e| self.err(e))?;
            self.inner.writer.flush().await?;
        }
        Ok(Some(keep_from))
    }

    async fn flush(&self) -> Result<(), LogError> {
        self.inner.writer.flush().await
    }

    fn location(&self) -> String {
        self.inner.path.display().to_string()
    }
}

/// The newest sequence stored in `tree`: its last key plus the entries after it in that
/// key's block.
fn last_of(stream: Stream, tree: &sled::Tree, path: &Path) -> Result<Option<u64>, LogError> {
    match tree.last().map_err(|e| LogError::sled(path, e))? {
        Some((key, value)) => {
            let first = record::decode_sequence(stream, &key)?;
            Ok(Some(
                first + record::entry_count(stream, first, &value)? - 1,
            ))
        }
        None => Ok(None),
    }
}
