//! Packet validation (US-007): field rules, cross-field rules, the JSON-Schema-equivalent
//! structural check, and custom validators registered per field.
//!
//! A [`CxpPacket`] can only be built through validating paths, so [`CxpPacket::validate`]
//! re-checks an existing packet (e.g. after a long-lived mutation sequence) and is the
//! hook where the review-subject payload rules run.

pub mod cross;
pub mod custom;
pub mod fields;
pub mod schema;

use super::error::CxpError;
use super::packet::CxpPacket;

impl CxpPacket {
    /// Field validation only: subject, thread id, payload kind and size, content type.
    pub fn validate_fields(&self) -> Result<(), CxpError> {
        fields::subject(&self.subject)?;
        fields::thread_id(&self.thread_id)?;
        fields::payload(&self.payload)?;
        if let Some(c) = &self.content_type {
            fields::content_type(c)?;
        }
        Ok(())
    }

    /// Full validation: fields, cross-field consistency, protocol compatibility and, for
    /// the review subjects (`review_code`, `fix_issues`, `review_complete`), the typed
    /// payload. Returns the first failure, naming its field.
    pub fn validate(&self) -> Result<(), CxpError> {
        self.validate_fields()?;
        self.validate_cross_fields()?;
        super::review::validate_review_payload(self)
    }
}
