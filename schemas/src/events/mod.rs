//! The event vocabulary: what the log records about every state change.
//!
//! - [`EventRecord`]: what a writer appends (id, time, source, key, command id, event);
//!   [`Envelope`]: what the log hands back (plus stream, sequence, epoch), with a flat
//!   JSON form for `orchestrata replay` and the gateway.
//! - [`Event`]: one variant per event type; the per-stream modules hold the payload
//!   types, [`types`] the shared enums and the packet record, [`command`] the kernel's
//!   commands.
//! - [`codec`]: Avro single-object [`encode`] / [`decode`] against `schemas/avro/*.avsc`.
//!
//! `docs/events.md` lists every stream and event with its fields.

pub mod codec;
pub mod command;
pub mod cxp_traffic;
mod event;
pub mod fields;
pub mod governance;
pub mod kernel;
pub mod presence;
pub mod provider;
mod record;
pub mod session;
pub mod stream;
pub mod types;
pub mod volk_lifecycle;
pub mod workflow;

pub use codec::{decode, encode, encode_into, CodecError};
pub use command::{Command, CommandKind};
pub use event::{Event, EventKind, EventTypeInfo};
pub use record::{Envelope, EventRecord};
pub use stream::{Stream, UnknownStream};
