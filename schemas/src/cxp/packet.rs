//! The CXP packet: the 11 fields of spec 004 plus `metadata`, `content_type` and the
//! optional `tracking` state.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;
use uuid::Uuid;

use super::alias::VolkAlias;
use super::error::CxpError;
use super::payload::Payload;
use super::priority::Priority;
use super::status::{DeliveryStatus, WorkStatus};
use super::tracking::Tracking;
use super::validate::fields;
use super::version::CURRENT_VERSION;

/// Free-form per-packet metadata (e.g. `review_cycle`), ordered for deterministic output.
pub type Metadata = BTreeMap<String, serde_json::Value>;

/// One CXP packet.
///
/// Fields are private so the invariants hold for the packet's whole life: a packet that
/// exists is valid. `message_id`, `from_agent` and `to_agent` never change; the statuses
/// only move along their state machines (see the `transition_*` methods); every change
/// stamps `timestamp` with the event time it was given.
///
/// JSON form (spec 004 names, snake_case; enums as lowercase strings):
///
/// ```json
/// {"message_id":"550e8400-e29b-41d4-a716-446655440000","from_agent":"U:Ox",
///  "to_agent":"U:Vz","thread_id":"thread-001","subject":"Generate UserService",
///  "payload":{"task":"generate_code"},"timestamp":"2026-01-15T10:30:00Z","priority":8,
///  "delivery_status":"delivered","work_status":"in_progress","protocol_version":"1.0.0"}
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CxpPacket {
    pub(crate) message_id: Uuid,
    pub(crate) from_agent: VolkAlias,
    pub(crate) to_agent: VolkAlias,
    pub(crate) thread_id: String,
    pub(crate) subject: String,
    pub(crate) payload: Payload,
    pub(crate) timestamp: DateTime<Utc>,
    pub(crate) priority: Priority,
    pub(crate) delivery_status: DeliveryStatus,
    pub(crate) work_status: WorkStatus,
    pub(crate) protocol_version: semver::Version,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) metadata: Metadata,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) content_type: Option<String>,
    #[serde(skip_serializing_if = "Tracking::is_default")]
    pub(crate) tracking: Tracking,
}

impl CxpPacket {
    /// A new packet stamped with the wall clock (`Utc::now()`): fresh `message_id` and
    /// `thread_id` ([`super::id_at`] the creation time: UUID v7, in time order),
    /// priority NORMAL, `queued` / `pending`, protocol 1.0.0.
    ///
    /// Code that must stay deterministic (folds, replays, tests) uses [`CxpPacket::new_at`].
    pub fn new(
        from: VolkAlias,
        to: VolkAlias,
        subject: impl Into<String>,
        payload: impl Into<Payload>,
    ) -> Result<Self, CxpError> {
        Self::new_at(from, to, subject, payload, Utc::now())
    }

    /// Like [`CxpPacket::new`] but with an explicit creation time.
    pub fn new_at(
        from: VolkAlias,
        to: VolkAlias,
        subject: impl Into<String>,
        payload: impl Into<Payload>,
        at: DateTime<Utc>,
    ) -> Result<Self, CxpError> {
        let subject = subject.into();
        fields::subject(&subject)?;
        let payload = payload.into();
        fields::payload(&payload)?;
        fields::distinct_agents(from, to)?;
        Ok(CxpPacket {
            message_id: super::id_at(at),
            from_agent: from,
            to_agent: to,
            thread_id: super::id_at(at).to_string(),
            subject,
            payload,
            timestamp: at,
            priority: Priority::NORMAL,
            delivery_status: DeliveryStatus::Queued,
            work_status: WorkStatus::Pending,
            protocol_version: CURRENT_VERSION,
            metadata: Metadata::new(),
            content_type: None,
            tracking: Tracking::default(),
        })
    }

    /// A reply in the same thread: sender and recipient swapped, `thread_id` inherited,
    /// new `message_id`, statuses reset, created at `at`.
    pub fn reply_at(
        &self,
        subject: impl Into<String>,
        payload: impl Into<Payload>,
        at: DateTime<Utc>,
    ) -> Result<CxpPacket, CxpError> {
        let mut p = CxpPacket::new_at(self.to_agent, self.from_agent, subject, payload, at)?;
        p.thread_id = self.thread_id.clone();
        p.protocol_version = self.protocol_version.clone();
        Ok(p)
    }

    /// Use a caller-chosen `message_id` (e.g. a deterministic id, or one read back from
    /// the log). Only available while building: consumes and returns the packet.
    pub fn with_message_id(mut self, id: Uuid) -> Self {
        self.message_id = id;
        self
    }

    /// Join an existing conversation. The id must be non-empty, at most 128 characters and
    /// free of whitespace.
    pub fn with_thread_id(mut self, thread_id: impl Into<String>) -> Result<Self, CxpError> {
        let t = thread_id.into();
        fields::thread_id(&t)?;
        self.thread_id = t;
        Ok(self)
    }

    /// Set the initial priority.
    pub fn with_priority(mut self, priority: Priority) -> Self {
        self.priority = priority;
        self
    }

    /// Name the media type of a binary payload (required for binary payloads).
    pub fn with_content_type(mut self, content_type: impl Into<String>) -> Result<Self, CxpError> {
        let c = content_type.into();
        fields::content_type(&c)?;
        self.content_type = Some(c);
        Ok(self)
    }

    /// Add one metadata entry.
    pub fn with_metadata(mut self, key: impl Into<String>, value: serde_json::Value) -> Self {
        self.metadata.insert(key.into(), value);
        self
    }

    /// Set the retry budget for failed deliveries.
    pub fn with_max_retries(mut self, max: u32) -> Self {
        self.tracking.max_retries = max;
        self
    }

    /// Unique id of this packet (UUID).
    pub fn message_id(&self) -> Uuid {
        self.message_id
    }
    /// Sender.
    pub fn from_agent(&self) -> VolkAlias {
        self.from_agent
    }
    /// Recipient.
    pub fn to_agent(&self) -> VolkAlias {
        self.to_agent
    }
    /// Conversation the packet belongs to.
    pub fn thread_id(&self) -> &str {
        &self.thread_id
    }
    /// Short statement of what the packet is about (1..=200 characters).
    pub fn subject(&self) -> &str {
        &self.subject
    }
    /// The body.
    pub fn payload(&self) -> &Payload {
        &self.payload
    }
    /// The JSON body parsed into a `Value` (a new tree on every call: keep it if you need
    /// it twice), or an error naming `payload` if it is binary. Its text, unparsed, is
    /// `payload().as_json()?.as_str()`.
    pub fn payload_json(&self) -> Result<serde_json::Value, CxpError> {
        self.payload.json_value()
    }
    /// The binary body, or an error naming `payload` if it is JSON.
    pub fn payload_binary(&self) -> Result<&[u8], CxpError> {
        self.payload.as_binary()
    }
    /// Time of creation or of the last modification.
    pub fn timestamp(&self) -> DateTime<Utc> {
        self.timestamp
    }
    /// Priority, 0..=10.
    pub fn priority(&self) -> Priority {
        self.priority
    }
    /// Delivery status.
    pub fn delivery_status(&self) -> DeliveryStatus {
        self.delivery_status
    }
    /// Work status.
    pub fn work_status(&self) -> WorkStatus {
        self.work_status
    }
    /// The CXP protocol version the packet was written in.
    pub fn protocol_version(&self) -> &semver::Version {
        &self.protocol_version
    }
    /// Metadata entries.
    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }
    /// Mutable metadata (metadata is not a header; changing it does not restamp).
    pub fn metadata_mut(&mut self) -> &mut Metadata {
        &mut self.metadata
    }
    /// Media type of a binary payload.
    pub fn content_type(&self) -> Option<&str> {
        self.content_type.as_deref()
    }
    /// Tracking state (histories, retries, assignment, resolution, notes).
    pub fn tracking(&self) -> &Tracking {
        &self.tracking
    }

    /// Bytes the packet occupies without its payload: the struct itself plus the heap held
    /// by headers, metadata and tracking (REQ-004-PERF-010; our target is < 1 KB).
    pub fn memory_without_payload(&self) -> usize {
        std::mem::size_of::<CxpPacket>()
            + self.thread_id.capacity()
            + self.subject.capacity()
            + self.content_type.as_ref().map_or(0, |c| c.capacity())
            + self.protocol_version.pre.as_str().len()
            + self.protocol_version.build.as_str().len()
            + self
                .metadata
                .iter()
                .map(|(k, v)| k.capacity() + v.to_string().len())
                .sum::<usize>()
            + self.tracking.heap_bytes()
    }
}

/// Packets hash by identity: two packets with the same `message_id` are the same message
/// (REQ-004-US-001-030, usable as map keys via the id).
impl std::hash::Hash for CxpPacket {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.message_id.hash(state);
    }
}
