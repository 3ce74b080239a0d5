//! The kernel and the views behind the control methods (`cxp.*`, `volk.*`, `session.*`),
//! and the one read-your-write step every mutating method shares.
//!
//! A mutating method builds a kernel `Command`, calls [`execute`], then [`settle`]s:
//! it waits (bounded by the gateway's `read_your_write_timeout_ms`, carried by
//! [`Views::read_your_write`]) until the view it answers from has applied the sequence
//! the kernel appended, so the caller's next read sees its own write. Kernel refusals
//! keep the kernel's stable code as `data.reason`.

use std::sync::Arc;
use std::time::Duration;

use orchestrata_projections::{
    DecisionIndex, GraphView, PacketIndex, SessionView, ThreadView, View, VolkView, WorkflowView,
};
use orchestrata_schemas::events::{Command, Stream};

use super::error::{ErrorCode, RpcError};
use super::idempotency::IdempotencyKey;
use super::kernel_port::KernelPort;
use super::state::Call;
use crate::kernel::{Fault, KernelError, Outcome};
use crate::log::EventLog;
use crate::projection::{Projections, ViewHandle};

/// How long a mutating method waits for its view to catch up before answering -32603
/// `view_lagging`, until [`views`] replaces it with the gateway's configured
/// `read_your_write_timeout` (the same default).
pub const READ_YOUR_WRITE: Duration = Duration::from_secs(2);

/// Handles on the live views (cheap clones of the runner's handles).
#[derive(Clone)]
pub struct Views {
    /// Packets and threads (`cxp.status`).
    pub threads: ViewHandle<ThreadView>,
    /// Sessions and portfolios.
    pub sessions: ViewHandle<SessionView>,
    /// Volks.
    pub volks: ViewHandle<VolkView>,
    /// Governance decisions.
    pub decisions: ViewHandle<DecisionIndex>,
    /// The knowledge graph (`knowledge.nodes`, `knowledge.relationships`).
    pub graph: ViewHandle<GraphView>,
    /// Packets by id: what topic filters match a packet's transitions on.
    pub packets: ViewHandle<PacketIndex>,
    /// Workflow runs (`workflow.get`).
    pub workflows: ViewHandle<WorkflowView>,
    /// How long [`settle`] waits for a view to apply the caller's write: the gateway's
    /// `read_your_write_timeout` once [`views`] handed these out.
    pub read_your_write: Duration,
    /// The log the views fold, once [`views`] handed these out: a repeated command
    /// (nothing appended now) settles at the stream's end as of the answer, where the
    /// first attempt's events are.
    pub log: Option<Arc<dyn EventLog>>,
}

impl Views {
    /// [`settle`] with these views' read-your-write bound: waits until `view` (one of
    /// these) has applied what `outcome` appended to `stream`.
    pub async fn settle<V: View>(
        &self,
        view: &ViewHandle<V>,
        outcome: &Outcome,
        stream: Stream,
    ) -> Result<(), RpcError> {
        if outcome.duplicate && self.log.is_some() {
            // The kernel answers a duplicate only once the first attempt's events are in
            // the log (its state is never ahead of it): they are at or below the end.
            return self.catch_up(view, stream).await;
        }
        settle(view, outcome, stream, self.read_your_write).await
    }

    /// Waits until `view` has folded `stream` up to the log's end as of now (what an
    /// ownership check reads must include a resource created just before).
    pub async fn catch_up<V: View>(
        &self,
        view: &ViewHandle<V>,
        stream: Stream,
    ) -> Result<(), RpcError> {
        let Some(log) = &self.log else {
            return Ok(());
        };
        let end = log
            .last_sequence(stream)
            .await
            .map_err(|e| RpcError::internal("log_unavailable", e.to_string()))?;
        match end {
            Some(sequence) => self.settle_at(view, stream, sequence).await,
            None => Ok(()),
        }
    }

    /// [`settle_at`] with these views' read-your-write bound.
    pub async fn settle_at<V: View>(
        &self,
        view: &ViewHandle<V>,
        stream: Stream,
        sequence: u64,
    ) -> Result<(), RpcError> {
        settle_at(view, stream, sequence, self.read_your_write).await
    }

    /// Handles on the views `projections` keeps live.
    pub fn of(projections: &Projections) -> Self {
        Views {
            threads: projections.threads().clone(),
            sessions: projections.sessions().clone(),
            volks: projections.volks().clone(),
            decisions: projections.decisions().clone(),
            graph: projections.graph().clone(),
            packets: projections.packets().clone(),
            workflows: projections.workflows().clone(),
            read_your_write: READ_YOUR_WRITE,
            log: None,
        }
    }
}

/// The kernel, or -32603 `kernel_unavailable` when this gateway runs without one.
pub fn kernel(call: &Call) -> Result<KernelPort, RpcError> {
    call.gw.services.kernel.clone().ok_or_else(|| {
        RpcError::internal(
            "kernel_unavailable",
            "this gateway was started without a kernel",
        )
    })
}

/// The views, or -32603 `projections_unavailable`; their read-your-write bound is the
/// gateway's configured `read_your_write_timeout`.
pub fn views(call: &Call) -> Result<Views, RpcError> {
    let mut views = call.gw.services.views.clone().ok_or_else(|| {
        RpcError::internal(
            "projections_unavailable",
            "this gateway was started without projections",
        )
    })?;
    views.read_your_write = call.gw.config.read_your_write_timeout;
    views.log = Some(call.gw.services.log.clone());
    Ok(views)
}

/// A kernel refusal as a JSON-RPC error: governance denials are -32001, the kernel's
/// own failures -32603, every refusal of the request itself -32602; `data.reason` is
/// always [`KernelError::code`].
pub fn kernel_error(e: KernelError) -> RpcError {
    let code = match e.fault() {
        Fault::Denied => ErrorCode::Unauthorized,
        Fault::System => ErrorCode::InternalError,
        Fault::Request => ErrorCode::InvalidParams,
    };
    let mut err = RpcError::new(code, e.code()).with("detail", e.to_string());
    if let KernelError::InvalidField { field, .. } = &e {
        err = err.with("field", *field);
    }
    if let KernelError::Denied { decision_id, .. } = &e {
        err = err.with("decision_id", decision_id.to_string());
    }
    err
}

/// Executes `command` as the kernel's caller, attributed to the caller's principal
/// (recorded on every event the command causes). A call with an `idempotency_key`
/// issues the command under the key's command id, so a repeat is the kernel's
/// duplicate (`outcome.duplicate`, nothing appended; see [`super::idempotency`]).
pub async fn execute(call: &Call, mut command: Command) -> Result<Outcome, RpcError> {
    if let Some(key) = IdempotencyKey::of(call)? {
        command.id = key.command_id();
    }
    execute_as(call, command).await
}

/// [`execute`] under `command`'s own id: for a call's second command, whose id the
/// caller derived from the idempotency key (see [`IdempotencyKey::derive`]).
pub async fn execute_as(call: &Call, command: Command) -> Result<Outcome, RpcError> {
    let command = match call.client.principal() {
        Some(p) => command.with_principal(p.name),
        None => command,
    };
    let preface: Vec<_> = call.take_audit().into_iter().collect();
    kernel(call)?
        .execute_with(command, preface)
        .await
        .map_err(kernel_error)
}

/// Waits until `view` has applied `stream` up to `sequence` (an event the gateway
/// appended itself), at most `within`; else -32603 `view_lagging` with the sequence and
/// `waited_ms`.
pub async fn settle_at<V: View>(
    view: &ViewHandle<V>,
    stream: Stream,
    sequence: u64,
    within: Duration,
) -> Result<(), RpcError> {
    view.wait_for(stream, sequence, within).await.map_err(|e| {
        RpcError::internal("view_lagging", e)
            .with("sequence", sequence)
            .with(
                "waited_ms",
                u64::try_from(within.as_millis()).unwrap_or(u64::MAX),
            )
    })
}

/// Waits until `view` has applied everything `outcome` appended to `stream`, at most
/// `within` (nothing to wait for when it appended nothing there).
pub async fn settle<V: View>(
    view: &ViewHandle<V>,
    outcome: &Outcome,
    stream: Stream,
    within: Duration,
) -> Result<(), RpcError> {
    let Some(sequence) = outcome.last_sequence(stream) else {
        return Ok(());
    };
    settle_at(view, stream, sequence, within).await
}
