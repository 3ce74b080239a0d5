//! The byte-level layer every backend implements.
//!
//! A backend stores opaque `(key, value)` pairs per [`Stream`] and assigns each a
//! sequence: 0 for the first pair of a stream, then +1, never repeated, never skipped.
//! It knows nothing about events; the typed [`EventLog`](super::EventLog) on top
//! encodes records to bytes on the way in and decodes them on the way out.

use std::sync::Arc;

use futures::stream::BoxStream;
use orchestrata_schemas::events::Stream;
use tokio::sync::watch;

use super::LogError;

/// One stored pair with the position the backend gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawEntry {
    /// Position in its stream.
    pub sequence: u64,
    /// The entity the record is about, stored beside the value.
    pub key: String,
    /// The encoded record.
    pub value: Vec<u8>,
    /// Wall-clock time the backend stored it (milliseconds since the Unix epoch). Used by
    /// age-based retention; never by folds.
    pub stored_at_ms: i64,
}

/// One stored pair lent by the backend for the duration of a visit (see
/// [`RawLog::read_each`]): nothing is copied out of storage unless the visitor does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawRef<'a> {
    /// Position in its stream.
    pub sequence: u64,
    /// The entity the record is about.
    pub key: &'a str,
    /// The encoded record.
    pub value: &'a [u8],
    /// Wall-clock time the backend stored it (milliseconds since the Unix epoch).
    pub stored_at_ms: i64,
}

impl RawEntry {
    /// The entry lent as a [`RawRef`].
    pub fn as_ref(&self) -> RawRef<'_> {
        RawRef {
            sequence: self.sequence,
            key: &self.key,
            value: &self.value,
            stored_at_ms: self.stored_at_ms,
        }
    }
}

impl RawRef<'_> {
    /// A copy the caller owns.
    pub fn to_entry(&self) -> RawEntry {
        RawEntry {
            sequence: self.sequence,
            key: self.key.to_owned(),
            value: self.value.to_vec(),
            stored_at_ms: self.stored_at_ms,
        }
    }
}

/// What [`RawLog::read_each`] calls for every entry, in order. An error stops the read
/// and is returned from it.
pub type Visit<'v> = dyn FnMut(RawRef<'_>) -> Result<(), LogError> + Send + 'v;

/// First and last sequence of a stream. Both are `None` while nothing was ever stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Bounds {
    /// The oldest sequence still stored (moves forward with retention).
    pub first: Option<u64>,
    /// The newest sequence stored.
    pub last: Option<u64>,
}

impl Bounds {
    /// How many records the stream holds now.
    pub fn count(&self) -> u64 {
        match (self.first, self.last) {
            (Some(first), Some(last)) => last + 1 - first,
            _ => 0,
        }
    }

    /// The sequence the next append will get.
    pub fn next(&self) -> u64 {
        self.last.map_or(0, |last| last + 1)
    }
}

/// A live stream of stored entries (see [`RawLog::tail_raw`]).
pub type RawTail = BoxStream<'static, Result<RawEntry, LogError>>;

/// What a tail of one stream follows (see [`RawLog::tail_feed`]): the backend it reads
/// and a watch of the stream's visible end.
pub struct TailFeed {
    /// The backend to read entries from, by sequence.
    pub log: Arc<dyn RawLog>,
    /// The sequence the next append will get, moved only once appended entries are
    /// readable (and durable, if the backend promises that).
    pub visible: watch::Receiver<u64>,
}

/// The storage contract of a log backend. Object safe: the typed log holds an
/// `Arc<dyn RawLog>`.
#[async_trait::async_trait]
pub trait RawLog: Send + Sync {
    /// Appends `entries` to `stream` atomically and in order; returns the sequence of the
    /// first one (the others follow by +1). Returns once the entries are as durable as
    /// the backend's policy promises.
    async fn append_raw(
        &self,
        stream: Stream,
        entries: Vec<(String, Vec<u8>)>,
    ) -> Result<u64, LogError>;

    /// Whether [`append_raw_streams`](RawLog::append_raw_streams) stores its parts as
    /// one unit (all or none). `false` unless a backend says otherwise.
    fn atomic_streams(&self) -> bool {
        false
    }

    /// Appends every part (one stream's entries, in order; each stream at most once);
    /// returns each part's first sequence, in order. Where
    /// [`atomic_streams`](RawLog::atomic_streams) holds, the parts are stored together
    /// or not at all; otherwise (this default) one after another, stopping at the first
    /// failure, whose error is returned — earlier parts may then be stored.
    async fn append_raw_streams(
        &self,
        parts: Vec<(Stream, Vec<(String, Vec<u8>)>)>,
    ) -> Result<Vec<u64>, LogError> {
        let mut firsts = Vec::with_capacity(parts.len());
        for (stream, entries) in parts {
            firsts.push(self.append_raw(stream, entries).await?);
        }
        Ok(firsts)
    }

    /// Entries with `from <= sequence <= to` (`to = None`: up to the end), in order, at
    /// most `limit`. Asking below the first retained sequence is [`LogError::Truncated`];
    /// past the end is an empty answer.
    async fn read_raw(
        &self,
        stream: Stream,
        from: u64,
        to: Option<u64>,
        limit: usize,
    ) -> Result<Vec<RawEntry>, LogError>;

    /// The same entries as [`read_raw`](RawLog::read_raw) with the same errors, handed
    /// to `visit` one by one as borrowed [`RawRef`]s instead of collected; returns how
    /// many were visited. Backends that can lend their stored bytes (sled) override it
    /// so a decoding reader skips one copy and two allocations per entry.
    async fn read_each(
        &self,
        stream: Stream,
        from: u64,
        to: Option<u64>,
        limit: usize,
        visit: &mut Visit<'_>,
    ) -> Result<usize, LogError> {
        let entries = self.read_raw(stream, from, to, limit).await?;
        for entry in &entries {
            visit(entry.as_ref())?;
        }
        Ok(entries.len())
    }

    /// The stream's first and last sequence.
    async fn bounds(&self, stream: Stream) -> Result<Bounds, LogError>;

    /// The id of the log's incarnation for this stream. Stable across restarts; a new
    /// value means earlier `(epoch, sequence)` positions are void.
    async fn epoch(&self, stream: Stream) -> Result<String, LogError>;

    /// What a tail of `stream` starting at `from` follows, once `from` is known to be
    /// retained (an error names the first retained sequence otherwise).
    async fn tail_feed(&self, stream: Stream, from: u64) -> Result<TailFeed, LogError>;

    /// Stored entries from `from`, then live ones as they are appended, with no gap and no
    /// duplicate at the seam. Ends only when the log is dropped or on error.
    async fn tail_raw(&self, stream: Stream, from: u64) -> Result<RawTail, LogError> {
        let feed = self.tail_feed(stream, from).await?;
        Ok(super::tail::watch_tail(
            feed,
            stream,
            from,
            super::tail::Stored,
        ))
    }

    /// Applies the stream's retention policy now; returns the first retained sequence.
    async fn enforce_retention(&self, stream: Stream) -> Result<Option<u64>, LogError>;

    /// Makes everything appended so far durable, whatever the fsync policy.
    async fn flush(&self) -> Result<(), LogError>;

    /// Where the log lives, for humans: a directory or a broker list.
    fn location(&self) -> String;
}
