//! The status machines applied to a packet (US-002 setters, US-004, US-005).
//!
//! Every mutator takes the event time `at` (the pure crate never reads the clock in
//! folds); the `*_now` wrappers stamp `Utc::now()` for interactive callers. A mutation
//! records `(status, at)` in the history and restamps `timestamp` with `at`; an `at`
//! earlier than the packet's current timestamp is refused, so histories stay ordered.

use chrono::{DateTime, Duration, Utc};

use super::alias::VolkAlias;
use super::error::CxpError;
use super::packet::CxpPacket;
use super::priority::Priority;
use super::status::{DeliveryStatus, WorkStatus};
use super::tracking::{Resolution, StatusChange, WorkNote};

impl CxpPacket {
    fn stamp(&mut self, at: DateTime<Utc>) -> Result<(), CxpError> {
        if at < self.timestamp {
            return Err(CxpError::invalid(
                "timestamp",
                format!(
                    "event time {} is earlier than the packet's timestamp {}",
                    at.to_rfc3339(),
                    self.timestamp.to_rfc3339()
                ),
            ));
        }
        Ok(())
    }

    fn check_delivery(&self, to: DeliveryStatus) -> Result<(), CxpError> {
        if !self.delivery_status.can_transition_to(to) {
            return Err(CxpError::InvalidDeliveryTransition {
                from: self.delivery_status,
                to,
            });
        }
        if to == DeliveryStatus::Queued && self.tracking.retry_count >= self.tracking.max_retries {
            return Err(CxpError::RetryLimitReached {
                max: self.tracking.max_retries,
            });
        }
        Ok(())
    }

    fn apply_delivery(&mut self, to: DeliveryStatus, at: DateTime<Utc>, reason: Option<String>) {
        if to == DeliveryStatus::Queued {
            self.tracking.retry_count += 1;
        }
        self.tracking.failure_reason = reason;
        self.delivery_status = to;
        self.tracking
            .delivery_history
            .push(StatusChange { status: to, at });
        self.timestamp = at;
    }

    /// Move the delivery status to `to` at event time `at`.
    ///
    /// `failed -> queued` is a retry: it counts against the retry budget and clears the
    /// failure reason; once `retry_count == max_retries` it is refused with
    /// [`CxpError::RetryLimitReached`]. Moving to `failed` needs a reason: use
    /// [`CxpPacket::fail_delivery`].
    pub fn transition_delivery(
        &mut self,
        to: DeliveryStatus,
        at: DateTime<Utc>,
    ) -> Result<(), CxpError> {
        self.check_delivery(to)?;
        if to == DeliveryStatus::Failed {
            return Err(CxpError::invalid(
                "failure_reason",
                "a failed delivery needs a reason (use fail_delivery)",
            ));
        }
        self.stamp(at)?;
        self.apply_delivery(to, at, None);
        Ok(())
    }

    /// Mark delivery failed at `at`, recording why (REQ-004-US-004-020).
    pub fn fail_delivery(
        &mut self,
        reason: impl Into<String>,
        at: DateTime<Utc>,
    ) -> Result<(), CxpError> {
        let reason = reason.into();
        if reason.trim().is_empty() {
            return Err(CxpError::invalid("failure_reason", "must not be empty"));
        }
        self.check_delivery(DeliveryStatus::Failed)?;
        self.stamp(at)?;
        self.apply_delivery(DeliveryStatus::Failed, at, Some(reason));
        Ok(())
    }

    /// Re-queue a failed delivery at `at` (uses one retry).
    pub fn retry_delivery(&mut self, at: DateTime<Utc>) -> Result<(), CxpError> {
        self.transition_delivery(DeliveryStatus::Queued, at)
    }

    /// Spec name for [`CxpPacket::transition_delivery`] (REQ-004-US-002-019).
    pub fn set_delivery_status(
        &mut self,
        to: DeliveryStatus,
        at: DateTime<Utc>,
    ) -> Result<(), CxpError> {
        self.transition_delivery(to, at)
    }

    /// [`CxpPacket::transition_delivery`] stamped with the wall clock.
    pub fn transition_delivery_now(&mut self, to: DeliveryStatus) -> Result<(), CxpError> {
        self.transition_delivery(to, Utc::now())
    }

    fn apply_work(&mut self, to: WorkStatus, at: DateTime<Utc>) -> Result<(), CxpError> {
        if !self.work_status.can_transition_to(to) {
            return Err(CxpError::InvalidWorkTransition {
                from: self.work_status,
                to,
            });
        }
        self.stamp(at)?;
        if let Some(since) = self.tracking.in_progress_since.take() {
            self.tracking.time_in_progress_ms += (at - since).num_milliseconds();
        }
        if to == WorkStatus::InProgress {
            self.tracking.in_progress_since = Some(at);
        }
        if to == WorkStatus::Pending {
            self.tracking.assigned_to = None;
        }
        self.work_status = to;
        self.tracking
            .work_history
            .push(StatusChange { status: to, at });
        self.timestamp = at;
        Ok(())
    }

    /// Move the work status to `to` at event time `at`. Entering `in_progress` assigns the
    /// recipient (`to_agent`); entering `resolved` records an empty (`null`) result. Use
    /// [`CxpPacket::start_work`] / [`CxpPacket::resolve_work`] to say who and what.
    pub fn transition_work(&mut self, to: WorkStatus, at: DateTime<Utc>) -> Result<(), CxpError> {
        match to {
            WorkStatus::InProgress => self.start_work(self.to_agent, at),
            WorkStatus::Resolved => self.resolve_work(serde_json::Value::Null, at),
            _ => self.apply_work(to, at),
        }
    }

    /// Spec name for [`CxpPacket::transition_work`] (REQ-004-US-002-020).
    pub fn set_work_status(&mut self, to: WorkStatus, at: DateTime<Utc>) -> Result<(), CxpError> {
        self.transition_work(to, at)
    }

    /// [`CxpPacket::transition_work`] stamped with the wall clock.
    pub fn transition_work_now(&mut self, to: WorkStatus) -> Result<(), CxpError> {
        self.transition_work(to, Utc::now())
    }

    /// `pending -> in_progress`, assigned to `assignee`.
    pub fn start_work(&mut self, assignee: VolkAlias, at: DateTime<Utc>) -> Result<(), CxpError> {
        self.apply_work(WorkStatus::InProgress, at)?;
        self.tracking.assigned_to = Some(assignee);
        Ok(())
    }

    /// `in_progress -> resolved`, recording `result` and the resolution time.
    pub fn resolve_work(
        &mut self,
        result: serde_json::Value,
        at: DateTime<Utc>,
    ) -> Result<(), CxpError> {
        self.apply_work(WorkStatus::Resolved, at)?;
        self.tracking.resolution = Some(Resolution { result, at });
        Ok(())
    }

    /// `in_progress -> pending` (re-queue); the assignment is dropped.
    pub fn requeue_work(&mut self, at: DateTime<Utc>) -> Result<(), CxpError> {
        self.apply_work(WorkStatus::Pending, at)
    }

    /// `resolved -> archived`.
    pub fn archive_work(&mut self, at: DateTime<Utc>) -> Result<(), CxpError> {
        self.apply_work(WorkStatus::Archived, at)
    }

    /// Attach a work note (not a header: does not restamp the packet).
    pub fn add_note(
        &mut self,
        author: VolkAlias,
        text: impl Into<String>,
        at: DateTime<Utc>,
    ) -> Result<(), CxpError> {
        let text = text.into();
        if text.trim().is_empty() {
            return Err(CxpError::invalid("notes", "a note must not be empty"));
        }
        self.tracking.notes.push(WorkNote { author, text, at });
        Ok(())
    }

    /// Change the priority at `at` (REQ-004-US-002-021). Policy checks (who may set what)
    /// live in [`super::PriorityPolicy`].
    pub fn set_priority(&mut self, priority: Priority, at: DateTime<Utc>) -> Result<(), CxpError> {
        self.stamp(at)?;
        self.priority = priority;
        self.timestamp = at;
        Ok(())
    }

    /// [`CxpPacket::set_priority`] stamped with the wall clock.
    pub fn set_priority_now(&mut self, priority: Priority) -> Result<(), CxpError> {
        self.set_priority(priority, Utc::now())
    }

    /// Set a header by name from a JSON value, as a generic API (e.g. the gateway) would.
    /// `message_id`, `from_agent` and `to_agent` are immutable; statuses go through their
    /// state machines; `priority` must be 0..=10; other names are refused.
    pub fn set_header(
        &mut self,
        name: &str,
        value: &serde_json::Value,
        at: DateTime<Utc>,
    ) -> Result<(), CxpError> {
        let text = |field: &'static str| {
            value
                .as_str()
                .ok_or_else(|| CxpError::invalid(field, "expected a string"))
        };
        match name {
            "message_id" => Err(CxpError::ImmutableField("message_id")),
            "from_agent" => Err(CxpError::ImmutableField("from_agent")),
            "to_agent" => Err(CxpError::ImmutableField("to_agent")),
            "delivery_status" => {
                let to = text("delivery_status")?
                    .parse()
                    .map_err(|r| CxpError::invalid("delivery_status", r))?;
                self.transition_delivery(to, at)
            }
            "work_status" => {
                let to = text("work_status")?
                    .parse()
                    .map_err(|r| CxpError::invalid("work_status", r))?;
                self.transition_work(to, at)
            }
            "priority" => {
                let p = value
                    .as_i64()
                    .ok_or_else(|| CxpError::invalid("priority", "expected an integer"))?;
                self.set_priority(Priority::new(p)?, at)
            }
            other => Err(CxpError::invalid(
                "header",
                format!("`{other}` is not a settable header"),
            )),
        }
    }

    /// Delivery transitions so far, oldest first.
    pub fn delivery_history(&self) -> &[StatusChange<DeliveryStatus>] {
        &self.tracking.delivery_history
    }
    /// Work transitions so far, oldest first.
    pub fn work_history(&self) -> &[StatusChange<WorkStatus>] {
        &self.tracking.work_history
    }
    /// Why the delivery failed, while it is failed.
    pub fn failure_reason(&self) -> Option<&str> {
        self.tracking.failure_reason.as_deref()
    }
    /// Retries used.
    pub fn retry_count(&self) -> u32 {
        self.tracking.retry_count
    }
    /// Retry budget.
    pub fn max_retries(&self) -> u32 {
        self.tracking.max_retries
    }
    /// Whether a failed delivery may still be re-queued.
    pub fn can_retry(&self) -> bool {
        self.delivery_status == DeliveryStatus::Failed
            && self.tracking.retry_count < self.tracking.max_retries
    }
    /// Who works on (or worked on) the packet.
    pub fn assigned_to(&self) -> Option<VolkAlias> {
        self.tracking.assigned_to
    }
    /// The resolution, once resolved.
    pub fn resolution(&self) -> Option<&Resolution> {
        self.tracking.resolution.as_ref()
    }
    /// Work notes.
    pub fn notes(&self) -> &[WorkNote] {
        &self.tracking.notes
    }
    /// Total time spent in progress as of `at` (finished stints plus the running one).
    pub fn time_in_progress(&self, at: DateTime<Utc>) -> Duration {
        let running = self
            .tracking
            .in_progress_since
            .map_or(0, |since| (at - since).num_milliseconds().max(0));
        Duration::milliseconds(self.tracking.time_in_progress_ms + running)
    }

    /// `delivery_status == queued`.
    pub fn is_queued(&self) -> bool {
        self.delivery_status == DeliveryStatus::Queued
    }
    /// `delivery_status == delivered`.
    pub fn is_delivered(&self) -> bool {
        self.delivery_status == DeliveryStatus::Delivered
    }
    /// `delivery_status == acknowledged`.
    pub fn is_acknowledged(&self) -> bool {
        self.delivery_status == DeliveryStatus::Acknowledged
    }
    /// `delivery_status == failed`.
    pub fn is_failed(&self) -> bool {
        self.delivery_status == DeliveryStatus::Failed
    }
    /// `work_status == pending`.
    pub fn is_pending(&self) -> bool {
        self.work_status == WorkStatus::Pending
    }
    /// `work_status == in_progress`.
    pub fn is_in_progress(&self) -> bool {
        self.work_status == WorkStatus::InProgress
    }
    /// `work_status == resolved`.
    pub fn is_resolved(&self) -> bool {
        self.work_status == WorkStatus::Resolved
    }
    /// `work_status == archived`.
    pub fn is_archived(&self) -> bool {
        self.work_status == WorkStatus::Archived
    }
}
