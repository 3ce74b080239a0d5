//! What the kernel answers: where each appended event landed.

use orchestrata_schemas::cxp::CxpPacket;
use orchestrata_schemas::events::Stream;
use uuid::Uuid;

/// One appended event's position. A caller that must read its own write waits until a
/// view's checkpoint for `stream` has passed `sequence`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Appended {
    /// Its stream.
    pub stream: Stream,
    /// Its sequence in that stream.
    pub sequence: u64,
    /// Its event type, e.g. `packet_sent`.
    pub event_type: &'static str,
}

/// The result of an executed command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The command.
    pub command_id: Uuid,
    /// Every event the command caused, in order: its own, then the Postman's reactions
    /// (e.g. an immediate `packet_failed` when the recipient cannot take the packet).
    pub events: Vec<Appended>,
    /// True when the command id had been executed before: nothing was appended now.
    pub duplicate: bool,
}

impl Outcome {
    /// The highest sequence this command appended to `stream`.
    pub fn last_sequence(&self, stream: Stream) -> Option<u64> {
        self.events
            .iter()
            .filter(|a| a.stream == stream)
            .map(|a| a.sequence)
            .max()
    }

    /// The event types appended, in order (handy in tests and logs).
    pub fn event_types(&self) -> Vec<&'static str> {
        self.events.iter().map(|a| a.event_type).collect()
    }
}

/// What a Volk reads from its inbox.
#[derive(Debug, Clone, PartialEq)]
pub struct Inbox {
    /// Delivered, unacknowledged packets in serving order (priority desc, time asc).
    pub packets: Vec<CxpPacket>,
    /// The `packet_delivered` events this read appended.
    pub events: Vec<Appended>,
}
