//! The one error type of the CXP contract.
//!
//! Every rejection names the field it is about, so a caller (a Volk, the gateway, an
//! operator reading a log line) can tell *what* was wrong without reading code.

use super::status::{DeliveryStatus, WorkStatus};

/// Why a CXP packet (or an operation on one) was rejected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CxpError {
    /// A required field is absent from the input.
    #[error("missing required field `{0}`")]
    MissingField(&'static str),
    /// A field is present but its value breaks the contract.
    #[error("invalid field `{field}`: {reason}")]
    InvalidField {
        /// The offending field (dotted path for nested fields, e.g. `payload.issues[0].line`).
        field: &'static str,
        /// Why the value was refused.
        reason: String,
    },
    /// The payload exceeds the limit for its kind (JSON 10 MB, binary 100 MB).
    #[error("payload too large: {kind} payload is {size} bytes, limit is {limit} bytes")]
    PayloadTooLarge {
        /// `"json"` or `"binary"`.
        kind: &'static str,
        /// Size of the offered payload in bytes.
        size: usize,
        /// The limit for that kind in bytes.
        limit: usize,
    },
    /// A delivery-status transition that the state machine forbids.
    #[error("invalid transition of `delivery_status`: {from} -> {to}")]
    InvalidDeliveryTransition {
        /// The current status.
        from: DeliveryStatus,
        /// The refused target status.
        to: DeliveryStatus,
    },
    /// A work-status transition that the state machine forbids.
    #[error("invalid transition of `work_status`: {from} -> {to}")]
    InvalidWorkTransition {
        /// The current status.
        from: WorkStatus,
        /// The refused target status.
        to: WorkStatus,
    },
    /// An attempt to change `message_id`, `from_agent` or `to_agent` after creation.
    #[error("field `{0}` is immutable once the packet exists")]
    ImmutableField(&'static str),
    /// The retry budget of a failed packet is spent.
    #[error("field `retry_count`: retry limit of {max} reached")]
    RetryLimitReached {
        /// The configured maximum number of retries.
        max: u32,
    },
    /// A field inside a typed payload (a review subject) is missing or wrong.
    #[error("invalid field `payload.{path}`: {reason}")]
    InvalidPayloadField {
        /// Path inside the payload, e.g. `issues[0].line`.
        path: String,
        /// Why the value was refused.
        reason: String,
    },
    /// The packet's protocol version cannot be handled by this implementation.
    #[error("field `protocol_version`: {version} is incompatible with {supported}")]
    IncompatibleVersion {
        /// The version the packet (or peer) carries.
        version: String,
        /// The version this side speaks.
        supported: String,
    },
    /// A custom validator registered for a field refused the packet.
    #[error("field `{field}` rejected by validator `{validator}`: {reason}")]
    Validator {
        /// The field the validator is registered for.
        field: String,
        /// The validator's name.
        validator: String,
        /// The validator's message.
        reason: String,
    },
    /// The input is not well-formed JSON / MessagePack / a known binary frame.
    #[error("cannot decode {format}: {reason}")]
    Decode {
        /// `"json"`, `"msgpack"` or `"frame"`.
        format: &'static str,
        /// What the decoder said.
        reason: String,
    },
    /// The packet could not be encoded (for example a JSON payload holding a non-finite number).
    #[error("cannot encode {format}: {reason}")]
    Encode {
        /// `"json"` or `"msgpack"`.
        format: &'static str,
        /// What the encoder said.
        reason: String,
    },
}

impl CxpError {
    /// Shorthand for [`CxpError::InvalidField`].
    pub fn invalid(field: &'static str, reason: impl Into<String>) -> Self {
        CxpError::InvalidField {
            field,
            reason: reason.into(),
        }
    }

    /// The field this error is about, when there is one (decode/encode errors of a whole
    /// document have none).
    pub fn field(&self) -> Option<&str> {
        match self {
            CxpError::MissingField(f) | CxpError::ImmutableField(f) => Some(f),
            CxpError::InvalidField { field, .. } => Some(field),
            CxpError::PayloadTooLarge { .. } => Some("payload"),
            CxpError::InvalidDeliveryTransition { .. } => Some("delivery_status"),
            CxpError::InvalidWorkTransition { .. } => Some("work_status"),
            CxpError::RetryLimitReached { .. } => Some("retry_count"),
            CxpError::IncompatibleVersion { .. } => Some("protocol_version"),
            CxpError::Validator { field, .. } => Some(field),
            CxpError::InvalidPayloadField { .. } => Some("payload"),
            CxpError::Decode { .. } | CxpError::Encode { .. } => None,
        }
    }
}
