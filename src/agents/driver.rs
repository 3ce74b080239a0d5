//! [`Driver`]: one interface to every kind of junior Volk (spec 005 US-007..010).
//!
//! A senior hands a [`Task`] to a junior and gets a CXP packet back, whatever runs the
//! junior: a local program ([`super::drivers::cli`]), an OpenAI-compatible endpoint
//! ([`super::drivers::api`]) or a chat page in headless Chromium
//! ([`super::drivers::browser`]). [`run_junior`] is the whole protocol:
//! `initialize` -> `send_task` -> `get_response` -> `cleanup` (always, even after a
//! failure), and the result becomes a packet with a work status.
//!
//! Juniors are stateless (Article XII): a driver keeps nothing between tasks except
//! what `cleanup` destroys.

use std::time::Duration;

use async_trait::async_trait;
use orchestrata_schemas::cxp::{CxpPacket, VolkAlias};

use super::error::AgentError;

/// Subject of a junior's answer to its senior.
pub const JUNIOR_RESULT_SUBJECT: &str = "junior_result";
/// Metadata key of a junior result packet: `succeeded` or `failed`. (The packet's CXP
/// work status starts `pending` like every sent packet; the senior resolves it.)
pub const WORK_STATUS_KEY: &str = "junior_status";

/// One unit of work for a junior.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    /// The task's id (travels into the result packet).
    pub id: String,
    /// What to do, as text (a prompt; the CLI driver writes it to stdin).
    pub prompt: String,
    /// How long the junior may take to answer.
    pub timeout: Duration,
}

/// Why a driver failed. Every variant names what went wrong; none is retried by the
/// driver itself except where its docs say so (the API driver's rate limits).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DriverError {
    /// The junior did not answer in time; whatever it ran was killed.
    #[error("timeout: no answer within {after_ms} ms")]
    Timeout {
        /// The limit.
        after_ms: u64,
    },
    /// The program or page could not be started.
    #[error("{field}: cannot start: {reason}")]
    Start {
        /// What was being started (`command`, `chromium`, `base_url`...).
        field: &'static str,
        /// Why.
        reason: String,
    },
    /// The junior crashed or exited unsuccessfully.
    #[error("crashed: {reason}")]
    Crashed {
        /// Exit status and the end of stderr, or the provider's error.
        reason: String,
    },
    /// The provider refused for now (HTTP 429) and retries ran out.
    #[error("rate_limited: {provider} (retry after {retry_after_ms} ms)")]
    RateLimited {
        /// The provider.
        provider: String,
        /// What it asked us to wait.
        retry_after_ms: u64,
    },
    /// The provider's quota is used up: fall back to the next one.
    #[error("quota_exhausted: {provider}: {reason}")]
    QuotaExhausted {
        /// The provider.
        provider: String,
        /// What it said or what we counted.
        reason: String,
    },
    /// The junior broke a constraint (Articles XII/XIII, allow-list, session cap): it
    /// is terminated.
    #[error("violation: {reason}")]
    Violation {
        /// Which rule.
        reason: String,
    },
    /// The answer could not be understood.
    #[error("protocol: {reason}")]
    Protocol {
        /// What was wrong with it.
        reason: String,
    },
    /// The answer (a program's output, a provider's body) was larger than allowed; what
    /// produced it was stopped.
    #[error("output_too_large: more than {limit} bytes")]
    OutputTooLarge {
        /// The cap in bytes.
        limit: u64,
    },
    /// A call was made out of order (e.g. `get_response` before `send_task`).
    #[error("state: {reason}")]
    State {
        /// What was expected.
        reason: String,
    },
}

/// What every junior runtime implements; see the module docs.
#[async_trait]
pub trait Driver: Send {
    /// A short name for logs and events: `cli`, `api:<provider>`, `browser:<site>`.
    fn name(&self) -> String;
    /// Prepares the runtime (start a browser, check the endpoint...).
    async fn initialize(&mut self) -> Result<(), DriverError>;
    /// Hands the task over.
    async fn send_task(&mut self, task: &Task) -> Result<(), DriverError>;
    /// Waits (within the task's timeout) for the answer text.
    async fn get_response(&mut self) -> Result<String, DriverError>;
    /// Releases everything: processes, profile directories, connections. Idempotent.
    async fn cleanup(&mut self) -> Result<(), DriverError>;
    /// Ends one task of a junior that lives on for more: releases what belongs to the
    /// task and keeps what belongs to the junior's session. By default that is
    /// everything ([`Driver::cleanup`]: a program runs once per task); a browser keeps
    /// its page, cookies and profile for the junior's lifetime.
    async fn finish_task(&mut self) -> Result<(), DriverError> {
        self.cleanup().await
    }
}

/// Runs one task on `driver` and always cleans up; the answer or the error.
pub async fn run_task(driver: &mut dyn Driver, task: &Task) -> Result<String, DriverError> {
    let result = async {
        driver.initialize().await?;
        driver.send_task(task).await?;
        driver.get_response().await
    }
    .await;
    let cleaned = driver.cleanup().await;
    let answer = result?;
    cleaned?;
    Ok(answer)
}

/// Runs one task on a driver that stays up for the next one (a junior that lives for a
/// session or a deadline): [`Driver::finish_task`] instead of `cleanup`, so a browser
/// keeps its session; the caller cleans up when the junior ends.
pub async fn run_kept(driver: &mut dyn Driver, task: &Task) -> Result<String, DriverError> {
    let result = async {
        driver.initialize().await?;
        driver.send_task(task).await?;
        driver.get_response().await
    }
    .await;
    let finished = driver.finish_task().await;
    let answer = result?;
    finished?;
    Ok(answer)
}

/// Runs `task` on `driver` for `junior` and turns the outcome into the packet the
/// junior sends its `parent`: subject [`JUNIOR_RESULT_SUBJECT`], payload
/// `{task_id, driver, status, output | error}`, and the junior's work status
/// (`succeeded` / `failed`) in metadata [`WORK_STATUS_KEY`].
pub async fn run_junior(
    driver: &mut dyn Driver,
    junior: &str,
    parent: &str,
    task: &Task,
) -> Result<(CxpPacket, Result<String, DriverError>), AgentError> {
    let result = run_task(driver, task).await;
    let packet = result_packet(junior, parent, task, &driver.name(), &result)?;
    Ok((packet, result))
}

/// The result packet of [`run_junior`] (also used by delegation's synthesis).
pub fn result_packet(
    junior: &str,
    parent: &str,
    task: &Task,
    driver: &str,
    result: &Result<String, DriverError>,
) -> Result<CxpPacket, AgentError> {
    let from = VolkAlias::parse_field(junior, "junior")
        .map_err(|e| AgentError::invalid("junior", e.to_string()))?;
    let to = VolkAlias::parse_field(parent, "parent")
        .map_err(|e| AgentError::invalid("parent", e.to_string()))?;
    let (status, body) = match result {
        Ok(output) => (
            "succeeded",
            serde_json::json!({
                "task_id": task.id, "driver": driver, "status": "succeeded", "output": output,
            }),
        ),
        Err(e) => (
            "failed",
            serde_json::json!({
                "task_id": task.id, "driver": driver, "status": "failed", "error": e.to_string(),
            }),
        ),
    };
    let packet = CxpPacket::new(from, to, JUNIOR_RESULT_SUBJECT, body)
        .map_err(|e| AgentError::invalid("output", e.to_string()))?;
    Ok(packet.with_metadata(WORK_STATUS_KEY, serde_json::Value::from(status)))
}
