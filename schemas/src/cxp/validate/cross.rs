//! Cross-field rules: facts that involve more than one field.

use super::super::error::CxpError;
use super::super::packet::CxpPacket;
use super::super::payload::Payload;
use super::super::status::{DeliveryStatus, WorkStatus};
use super::super::tracking::StatusChange;
use super::super::version::check_compatibility;
use super::fields;

impl CxpPacket {
    /// Check the cross-field rules:
    /// - `from_agent` differs from `to_agent`;
    /// - a binary payload names its `content_type`;
    /// - the protocol version has a major version we speak;
    /// - each status history is a valid walk of its state machine, in time order, not later
    ///   than `timestamp`, ending in the current status (US-007-013/014);
    /// - `failure_reason` only while `failed`, `resolution` only once resolved or archived,
    ///   `in_progress_since` only while in progress, `retry_count <= max_retries`.
    pub fn validate_cross_fields(&self) -> Result<(), CxpError> {
        fields::distinct_agents(self.from_agent, self.to_agent)?;
        if matches!(self.payload, Payload::Binary(_)) && self.content_type.is_none() {
            return Err(CxpError::invalid(
                "content_type",
                "required when the payload is binary",
            ));
        }
        check_compatibility(&self.protocol_version)?;
        let t = &self.tracking;
        check_history(
            "tracking.delivery_history",
            &t.delivery_history,
            DeliveryStatus::Queued,
            self.delivery_status,
            self,
            DeliveryStatus::can_transition_to,
        )?;
        check_history(
            "tracking.work_history",
            &t.work_history,
            WorkStatus::Pending,
            self.work_status,
            self,
            WorkStatus::can_transition_to,
        )?;
        if t.failure_reason.is_some() && self.delivery_status != DeliveryStatus::Failed {
            return Err(CxpError::invalid(
                "tracking.failure_reason",
                format!(
                    "only allowed while delivery_status is failed, not {}",
                    self.delivery_status
                ),
            ));
        }
        if t.resolution.is_some()
            && !matches!(
                self.work_status,
                WorkStatus::Resolved | WorkStatus::Archived
            )
        {
            return Err(CxpError::invalid(
                "tracking.resolution",
                format!(
                    "only allowed once work_status is resolved, not {}",
                    self.work_status
                ),
            ));
        }
        if t.in_progress_since.is_some() && self.work_status != WorkStatus::InProgress {
            return Err(CxpError::invalid(
                "tracking.in_progress_since",
                format!(
                    "only allowed while work_status is in_progress, not {}",
                    self.work_status
                ),
            ));
        }
        if t.retry_count > t.max_retries {
            return Err(CxpError::invalid(
                "tracking.retry_count",
                format!("{} exceeds max_retries {}", t.retry_count, t.max_retries),
            ));
        }
        if t.time_in_progress_ms < 0 {
            return Err(CxpError::invalid(
                "tracking.time_in_progress_ms",
                "must not be negative",
            ));
        }
        Ok(())
    }
}

fn check_history<S: Copy + PartialEq + std::fmt::Display>(
    field: &'static str,
    history: &[StatusChange<S>],
    initial: S,
    current: S,
    packet: &CxpPacket,
    allowed: fn(S, S) -> bool,
) -> Result<(), CxpError> {
    let Some(last) = history.last() else {
        return Ok(());
    };
    if last.status != current {
        return Err(CxpError::invalid(
            field,
            format!(
                "ends in {} but the packet's status is {}",
                last.status, current
            ),
        ));
    }
    let mut prev = initial;
    let mut prev_at = None;
    for step in history {
        if !allowed(prev, step.status) {
            return Err(CxpError::invalid(
                field,
                format!("records a forbidden transition {} -> {}", prev, step.status),
            ));
        }
        if prev_at.is_some_and(|p| step.at < p) {
            return Err(CxpError::invalid(field, "entries are not in time order"));
        }
        if step.at > packet.timestamp {
            return Err(CxpError::invalid(
                field,
                "records a transition later than the packet's timestamp",
            ));
        }
        prev = step.status;
        prev_at = Some(step.at);
    }
    Ok(())
}
