//! The two status machines of a packet: delivery (transport) and work (the task it carries).
//!
//! Allowed delivery transitions: `queued -> delivered`, `queued -> failed`,
//! `delivered -> acknowledged`, `delivered -> failed`, and `failed -> queued` (a retry,
//! bounded by the packet's retry budget). Allowed work transitions:
//! `pending -> in_progress`, `in_progress -> resolved`, `in_progress -> pending`
//! (re-queue), `resolved -> archived`. Everything else is refused.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Where a packet is on its way from sender to recipient.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeliveryStatus {
    /// Accepted by the Postman, waiting for the recipient.
    Queued,
    /// Handed to the recipient.
    Delivered,
    /// The recipient confirmed receipt. Terminal.
    Acknowledged,
    /// Delivery failed; may be retried (back to `queued`) within the retry budget.
    Failed,
}

impl DeliveryStatus {
    /// Every value, in lifecycle order.
    pub const ALL: [DeliveryStatus; 4] = [
        DeliveryStatus::Queued,
        DeliveryStatus::Delivered,
        DeliveryStatus::Acknowledged,
        DeliveryStatus::Failed,
    ];

    /// The wire spelling (`"queued"`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryStatus::Queued => "queued",
            DeliveryStatus::Delivered => "delivered",
            DeliveryStatus::Acknowledged => "acknowledged",
            DeliveryStatus::Failed => "failed",
        }
    }

    /// Whether the state machine allows moving from `self` to `to`.
    pub fn can_transition_to(self, to: DeliveryStatus) -> bool {
        use DeliveryStatus::*;
        matches!(
            (self, to),
            (Queued, Delivered)
                | (Queued, Failed)
                | (Delivered, Acknowledged)
                | (Delivered, Failed)
                | (Failed, Queued)
        )
    }
}

impl fmt::Display for DeliveryStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for DeliveryStatus {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "queued" => Ok(DeliveryStatus::Queued),
            "delivered" => Ok(DeliveryStatus::Delivered),
            "acknowledged" => Ok(DeliveryStatus::Acknowledged),
            "failed" => Ok(DeliveryStatus::Failed),
            other => Err(format!(
                "`{other}` is not one of queued, delivered, acknowledged, failed"
            )),
        }
    }
}

/// Where the work a packet asks for stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkStatus {
    /// Not started.
    Pending,
    /// A Volk (`assigned_to`) is working on it.
    InProgress,
    /// Done, with a resolution result.
    Resolved,
    /// Closed for good. Terminal.
    Archived,
}

impl WorkStatus {
    /// Every value, in lifecycle order.
    pub const ALL: [WorkStatus; 4] = [
        WorkStatus::Pending,
        WorkStatus::InProgress,
        WorkStatus::Resolved,
        WorkStatus::Archived,
    ];

    /// The wire spelling (`"in_progress"`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            WorkStatus::Pending => "pending",
            WorkStatus::InProgress => "in_progress",
            WorkStatus::Resolved => "resolved",
            WorkStatus::Archived => "archived",
        }
    }

    /// Whether the state machine allows moving from `self` to `to`.
    pub fn can_transition_to(self, to: WorkStatus) -> bool {
        use WorkStatus::*;
        matches!(
            (self, to),
            (Pending, InProgress)
                | (InProgress, Resolved)
                | (InProgress, Pending)
                | (Resolved, Archived)
        )
    }
}

impl fmt::Display for WorkStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for WorkStatus {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "pending" => Ok(WorkStatus::Pending),
            "in_progress" => Ok(WorkStatus::InProgress),
            "resolved" => Ok(WorkStatus::Resolved),
            "archived" => Ok(WorkStatus::Archived),
            other => Err(format!(
                "`{other}` is not one of pending, in_progress, resolved, archived"
            )),
        }
    }
}
