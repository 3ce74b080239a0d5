//! Packet headers (US-002): everything but the payload that routes and tracks a packet.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::alias::VolkAlias;
use super::error::CxpError;
use super::packet::CxpPacket;
use super::payload::Payload;
use super::priority::Priority;
use super::status::{DeliveryStatus, WorkStatus};
use super::validate::fields;
use super::version::parse_version;

/// The ten headers of a packet (all spec-004 fields except `payload`) plus `content_type`.
///
/// This is what the event log records about a sent packet next to (or instead of) its
/// body; [`CxpPacket::from_headers`] rebuilds a validated packet from it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CxpHeaders {
    /// Unique id of the packet.
    pub message_id: Uuid,
    /// Sender.
    pub from_agent: VolkAlias,
    /// Recipient.
    pub to_agent: VolkAlias,
    /// Conversation id.
    pub thread_id: String,
    /// What the packet is about.
    pub subject: String,
    /// Creation / last-modification time.
    pub timestamp: DateTime<Utc>,
    /// Priority 0..=10.
    pub priority: Priority,
    /// Delivery status.
    pub delivery_status: DeliveryStatus,
    /// Work status.
    pub work_status: WorkStatus,
    /// Protocol version (semver text).
    pub protocol_version: String,
    /// Media type of a binary payload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
}

impl CxpPacket {
    /// Extract the headers (REQ-004-US-002-001): cheap, copies two short strings.
    pub fn get_headers(&self) -> CxpHeaders {
        CxpHeaders {
            message_id: self.message_id,
            from_agent: self.from_agent,
            to_agent: self.to_agent,
            thread_id: self.thread_id.clone(),
            subject: self.subject.clone(),
            timestamp: self.timestamp,
            priority: self.priority,
            delivery_status: self.delivery_status,
            work_status: self.work_status,
            protocol_version: self.protocol_version.to_string(),
            content_type: self.content_type.clone(),
        }
    }

    /// Rebuild a packet from recorded headers and its payload, validating every field and
    /// the cross-field rules (metadata and tracking start empty).
    pub fn from_headers(headers: CxpHeaders, payload: Payload) -> Result<CxpPacket, CxpError> {
        fields::thread_id(&headers.thread_id)?;
        fields::subject(&headers.subject)?;
        fields::payload(&payload)?;
        fields::distinct_agents(headers.from_agent, headers.to_agent)?;
        if let Some(c) = &headers.content_type {
            fields::content_type(c)?;
        }
        let packet = CxpPacket {
            message_id: headers.message_id,
            from_agent: headers.from_agent,
            to_agent: headers.to_agent,
            thread_id: headers.thread_id,
            subject: headers.subject,
            payload,
            timestamp: headers.timestamp,
            priority: headers.priority,
            delivery_status: headers.delivery_status,
            work_status: headers.work_status,
            protocol_version: parse_version(&headers.protocol_version)?,
            metadata: Default::default(),
            content_type: headers.content_type,
            tracking: Default::default(),
        };
        packet.validate_cross_fields()?;
        Ok(packet)
    }
}
