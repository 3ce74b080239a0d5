//! The typed log: [`EventRecord`]s in, [`Envelope`]s out, over any [`RawLog`] backend.

use std::sync::Arc;

use futures::stream::{BoxStream, StreamExt};
use orchestrata_schemas::events::{self, Envelope, EventRecord, Stream};

use super::decoded::Decoded;
use super::raw::{Bounds, RawEntry, RawLog, RawRef};
use super::LogError;

/// A live stream of envelopes (see [`EventLog::tail`]).
pub type EnvelopeStream = BoxStream<'static, Result<Envelope, LogError>>;

/// A live stream of envelopes that other tails of the process may hold too (see
/// [`EventLog::tail_shared`]).
pub type SharedEnvelopeStream = BoxStream<'static, Result<Arc<Envelope>, LogError>>;

/// The event log the kernel writes and the gateway and projections read.
///
/// Object safe: hold it as `Arc<dyn EventLog>`. Sequences are per stream, start at 0 and
/// grow by one with no gaps; `(epoch, sequence)` identifies an event for as long as the
/// stream's epoch stays the same.
#[async_trait::async_trait]
pub trait EventLog: Send + Sync {
    /// Appends one record to its stream ([`EventRecord::stream`]); returns its sequence
    /// once it is as durable as the configured policy promises.
    async fn append(&self, record: &EventRecord) -> Result<u64, LogError>;

    /// Appends records of one stream in order, contiguously; returns the first sequence
    /// (an empty batch writes nothing and returns 0). Records of
    /// different streams are refused with [`LogError::MixedStreams`].
    async fn append_batch(&self, records: &[EventRecord]) -> Result<u64, LogError>;

    /// Whether [`append_streams`](EventLog::append_streams) stores all its records or
    /// none (sled: yes, one transaction across the streams' trees; Kafka: not yet).
    fn atomic_streams(&self) -> bool {
        false
    }

    /// Appends records of any streams: each stream's records contiguously and in input
    /// order, the streams in the order they first appear. Returns each record's
    /// sequence, in input order. Where [`atomic_streams`](EventLog::atomic_streams)
    /// holds, every record is stored or none is; otherwise (this default) the streams
    /// are appended one after another, stopping at the first failure — the records of
    /// earlier streams may then be stored.
    async fn append_streams(&self, records: &[EventRecord]) -> Result<Vec<u64>, LogError> {
        append_stream_by_stream(self, records).await
    }

    /// Events with `from <= sequence <= to` (`to = None`: to the end), oldest first, at
    /// most `limit`. Below the first retained sequence: [`LogError::Truncated`]. Past the
    /// end: empty.
    async fn read(
        &self,
        stream: Stream,
        from: u64,
        to: Option<u64>,
        limit: usize,
    ) -> Result<Vec<Envelope>, LogError>;

    /// First and last sequence of `stream` (both `None` if it never had an event).
    async fn bounds(&self, stream: Stream) -> Result<Bounds, LogError>;

    /// The oldest retained sequence.
    async fn first_sequence(&self, stream: Stream) -> Result<Option<u64>, LogError> {
        Ok(self.bounds(stream).await?.first)
    }

    /// The newest sequence.
    async fn last_sequence(&self, stream: Stream) -> Result<Option<u64>, LogError> {
        Ok(self.bounds(stream).await?.last)
    }

    /// The stream's epoch: changes only when the log's storage is recreated.
    async fn epoch(&self, stream: Stream) -> Result<String, LogError>;

    /// Stored events from `from`, then live ones, with no gap and no duplicate at the
    /// seam. Drop the stream to stop tailing.
    async fn tail(&self, stream: Stream, from: u64) -> Result<EnvelopeStream, LogError>;

    /// [`tail`](EventLog::tail) for readers that only look at the events: the same
    /// events, but an event another tail of this log decoded moments ago is handed
    /// out as the same allocation instead of being decoded again (the view runners and
    /// the gateway's hubs all follow the head of the busy streams). This default
    /// shares nothing.
    async fn tail_shared(
        &self,
        stream: Stream,
        from: u64,
    ) -> Result<SharedEnvelopeStream, LogError> {
        Ok(self
            .tail(stream, from)
            .await?
            .map(|e| e.map(Arc::new))
            .boxed())
    }

    /// Applies `stream`'s retention policy now; returns the first retained sequence.
    async fn enforce_retention(&self, stream: Stream) -> Result<Option<u64>, LogError>;

    /// Makes every acknowledged append durable regardless of the fsync policy.
    async fn flush(&self) -> Result<(), LogError>;

    /// Where the log lives (a directory or brokers), for messages.
    fn location(&self) -> String;
}

/// The indices of `records` grouped by stream, streams in order of first appearance.
pub fn by_stream(records: &[EventRecord]) -> Vec<(Stream, Vec<usize>)> {
    let mut parts: Vec<(Stream, Vec<usize>)> = Vec::new();
    for (i, record) in records.iter().enumerate() {
        let stream = record.stream();
        match parts.iter_mut().find(|(s, _)| *s == stream) {
            Some((_, indices)) => indices.push(i),
            None => parts.push((stream, vec![i])),
        }
    }
    parts
}

/// Each record's sequence, in input order, from the first sequence each part of
/// [`by_stream`] was given (the part's records follow it by +1).
pub fn scatter_sequences(
    parts: &[(Stream, Vec<usize>)],
    firsts: impl IntoIterator<Item = u64>,
    len: usize,
) -> Vec<u64> {
    let mut sequences = vec![0; len];
    for ((_, indices), first) in parts.iter().zip(firsts) {
        for (k, &i) in indices.iter().enumerate() {
            sequences[i] = first + k as u64;
        }
    }
    sequences
}

/// [`EventLog::append_streams`] without atomicity: one [`EventLog::append_batch`] per
/// stream, in order of first appearance, stopping at the first failure (the default,
/// and what a wrapping log that must see each stream's batch calls).
pub async fn append_stream_by_stream<L: EventLog + ?Sized>(
    log: &L,
    records: &[EventRecord],
) -> Result<Vec<u64>, LogError> {
    let parts = by_stream(records);
    let mut firsts = Vec::with_capacity(parts.len());
    for (_, indices) in &parts {
        let batch: Vec<EventRecord> = indices.iter().map(|&i| records[i].clone()).collect();
        firsts.push(log.append_batch(&batch).await?);
    }
    Ok(scatter_sequences(&parts, firsts, records.len()))
}

/// [`EventLog`] over a byte-level backend: encodes with the Avro single-object codec.
#[derive(Clone)]
pub struct TypedLog {
    raw: Arc<dyn RawLog>,
    /// What the tails at the head decoded (see `decoded.rs`).
    decoded: Arc<Decoded>,
}

impl TypedLog {
    /// Wraps a backend.
    pub fn new(raw: Arc<dyn RawLog>) -> Self {
        TypedLog {
            raw,
            decoded: Arc::default(),
        }
    }

    /// The backend underneath (for byte-level access in tools and tests).
    pub fn raw(&self) -> &Arc<dyn RawLog> {
        &self.raw
    }
}

fn encode(record: &EventRecord) -> Result<(String, Vec<u8>), LogError> {
    let bytes = events::encode(record).map_err(|e| LogError::Encode {
        stream: record.stream(),
        event_id: record.event_id,
        reason: e.to_string(),
    })?;
    Ok((record.key.clone(), bytes))
}

fn decode(stream: Stream, epoch: &str, entry: RawRef<'_>) -> Result<Envelope, LogError> {
    let record = events::decode(entry.value).map_err(|e| LogError::Corrupt {
        stream,
        sequence: entry.sequence,
        reason: format!("cannot decode the event: {e}"),
    })?;
    Ok(Envelope {
        stream,
        sequence: entry.sequence,
        epoch: epoch.to_owned(),
        record,
    })
}

fn decode_owned(stream: Stream, epoch: &str, entry: RawEntry) -> Result<Envelope, LogError> {
    decode(stream, epoch, entry.as_ref())
}

/// The source of a shared tail: an event another tail decoded is taken from the
/// [`Decoded`] ring, its entry not even read from the store (a `packet_sent` is
/// followed by five tails of a process, and four of them need not read and copy its
/// bytes only to find it decoded); the first to read one decodes it and offers it there.
struct Shared {
    decoded: Arc<Decoded>,
    stream: Stream,
    epoch: String,
}

impl super::tail::Source for Shared {
    type Item = Arc<Envelope>;

    fn at_hand(&self, sequence: u64) -> Option<Arc<Envelope>> {
        // Only tails offer to the ring, and only entries they read: what it holds was
        // visible.
        self.decoded.get(self.stream, &self.epoch, sequence)
    }

    fn of_entry(&self, entry: RawEntry) -> Result<Arc<Envelope>, LogError> {
        if let Some(event) = self.at_hand(entry.sequence) {
            return Ok(event);
        }
        let size = entry.value.len();
        let event = Arc::new(decode_owned(self.stream, &self.epoch, entry)?);
        self.decoded.offer(&event, size);
        Ok(event)
    }
}

#[async_trait::async_trait]
impl EventLog for TypedLog {
    async fn append(&self, record: &EventRecord) -> Result<u64, LogError> {
        self.raw
            .append_raw(record.stream(), vec![encode(record)?])
            .await
    }

    async fn append_batch(&self, records: &[EventRecord]) -> Result<u64, LogError> {
        let Some(head) = records.first() else {
            return Ok(0);
        };
        let stream = head.stream();
        let mut entries = Vec::with_capacity(records.len());
        for (index, record) in records.iter().enumerate() {
            if record.stream() != stream {
                return Err(LogError::MixedStreams {
                    index,
                    expected: stream,
                    found: record.stream(),
                });
            }
            entries.push(encode(record)?);
        }
        self.raw.append_raw(stream, entries).await
    }

    fn atomic_streams(&self) -> bool {
        self.raw.atomic_streams()
    }

    async fn append_streams(&self, records: &[EventRecord]) -> Result<Vec<u64>, LogError> {
        let parts = by_stream(records);
        let mut raw_parts = Vec::with_capacity(parts.len());
        for (stream, indices) in &parts {
            let mut entries = Vec::with_capacity(indices.len());
            for &i in indices {
                entries.push(encode(&records[i])?);
            }
            raw_parts.push((*stream, entries));
        }
        let firsts = self.raw.append_raw_streams(raw_parts).await?;
        Ok(scatter_sequences(&parts, firsts, records.len()))
    }

    async fn read(
        &self,
        stream: Stream,
        from: u64,
        to: Option<u64>,
        limit: usize,
    ) -> Result<Vec<Envelope>, LogError> {
        let epoch = self.raw.epoch(stream).await?;
        // Decode straight from the backend's bytes: no intermediate RawEntry copies.
        let mut out = Vec::with_capacity(limit.min(4096));
        self.raw
            .read_each(stream, from, to, limit, &mut |entry| {
                out.push(decode(stream, &epoch, entry)?);
                Ok(())
            })
            .await?;
        Ok(out)
    }

    async fn bounds(&self, stream: Stream) -> Result<Bounds, LogError> {
        self.raw.bounds(stream).await
    }

    async fn epoch(&self, stream: Stream) -> Result<String, LogError> {
        self.raw.epoch(stream).await
    }

    async fn tail(&self, stream: Stream, from: u64) -> Result<EnvelopeStream, LogError> {
        let epoch = self.raw.epoch(stream).await?;
        let raw = self.raw.tail_raw(stream, from).await?;
        Ok(raw
            .map(move |entry| entry.and_then(|entry| decode_owned(stream, &epoch, entry)))
            .boxed())
    }

    async fn tail_shared(
        &self,
        stream: Stream,
        from: u64,
    ) -> Result<SharedEnvelopeStream, LogError> {
        let epoch = self.raw.epoch(stream).await?;
        let feed = self.raw.tail_feed(stream, from).await?;
        let source = Shared {
            decoded: self.decoded.clone(),
            stream,
            epoch,
        };
        Ok(super::tail::watch_tail(feed, stream, from, source))
    }

    async fn enforce_retention(&self, stream: Stream) -> Result<Option<u64>, LogError> {
        self.raw.enforce_retention(stream).await
    }

    async fn flush(&self) -> Result<(), LogError> {
        self.raw.flush().await
    }

    fn location(&self) -> String {
        self.raw.location()
    }
}
