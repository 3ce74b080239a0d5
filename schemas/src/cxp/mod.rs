//! The CXP packet (spec 004): the message every Volk sends and receives.
//!
//! - [`CxpPacket`]: the 11 spec fields plus `metadata`, `content_type` and tracking state;
//!   only valid packets can be built.
//! - [`VolkAlias`], [`Priority`], [`Payload`], [`DeliveryStatus`], [`WorkStatus`]: the
//!   validated field types; a JSON payload is kept as its text ([`JsonPayload`]).
//! - [`CxpHeaders`]: the headers alone, as the event log records them.
//! - [`CxpError`]: every rejection, naming the field and the reason.

pub mod alias;
pub mod codec;
pub mod error;
mod field;
pub mod headers;
pub mod id;
pub mod json_payload;
mod json_text;
pub mod packet;
pub mod payload;
pub mod policy;
pub mod priority;
pub mod queue;
mod raw;
pub mod review;
pub mod select;
pub mod status;
pub mod tracking;
mod transitions;
pub mod validate;
pub mod version;

pub use alias::VolkAlias;
pub use codec::COMPRESSION_THRESHOLD;
pub use error::CxpError;
pub use headers::CxpHeaders;
pub use id::id_at;
pub use json_payload::JsonPayload;
pub use packet::{CxpPacket, Metadata};
pub use payload::{Payload, MAX_BINARY_PAYLOAD_BYTES, MAX_JSON_PAYLOAD_BYTES};
pub use policy::{MessageClass, PriorityPolicy};
pub use priority::Priority;
pub use queue::PriorityQueue;
pub use review::{
    FixIssues, ReviewCode, ReviewComplete, ReviewIssue, ReviewPayload, ReviewSummary, Severity,
};
pub use status::{DeliveryStatus, WorkStatus};
pub use tracking::{Resolution, StatusChange, Tracking, WorkNote, DEFAULT_MAX_RETRIES};
pub use validate::custom::ValidatorRegistry;
pub use validate::schema::{validate_document, CXP_PACKET_SCHEMA};
pub use version::{
    check_compatibility, check_compatibility_with, negotiate, upgrade_packet, Compatibility,
    CURRENT_VERSION, SUPPORTED_VERSIONS,
};
