//! The persistent event log: the source of truth everything else is folded from.
//!
//! Two layers:
//! - [`RawLog`]: what a backend implements — per stream, append `(key, bytes)` and get a
//!   sequence (0, 1, 2, ... with no gaps), range reads, bounds, epoch, tail, retention.
//!   Backends: [`SledLog`] (embedded, the default) and [`KafkaLog`].
//! - [`EventLog`]: the typed log the kernel, gateway and projections use. It encodes each
//!   [`EventRecord`](orchestrata_schemas::events::EventRecord) with the Avro single-object
//!   codec and hands back [`Envelope`](orchestrata_schemas::events::Envelope)s.
//!
//! Open one from configuration with [`open`].

pub mod config;
mod decoded;
mod embedded;
mod error;
mod event_log;
mod kafka;
mod open;
mod pager;
mod raw;
mod recorder;
mod tail;

pub use embedded::SledLog;
pub use error::LogError;
pub use event_log::{
    append_stream_by_stream, by_stream, scatter_sequences, EnvelopeStream, EventLog,
    SharedEnvelopeStream, TypedLog,
};
pub use kafka::KafkaLog;
pub use open::{open, open_raw, spawn_retention};
pub use pager::{Pager, DEFAULT_PAGE};
pub use raw::{Bounds, RawEntry, RawLog, RawRef, RawTail, TailFeed, Visit};
pub use recorder::{append_via, RecordError, Recorder};
