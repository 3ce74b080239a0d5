//! Governance inside the writer: a governed command is decided in the writer's batch,
//! and its `decision recorded` event is appended with the events it allowed.
//!
//! One writer decides every command in order, so there is nothing to lock per subject:
//! each decision sees the facts of every command decided before it — appended, or
//! earlier in the same batch (folded at the sequences they will take, see
//! [`crate::governance`]'s `step` module). A command costs one append, and under group
//! commit a share of one fsync, instead of a decision append and then its events.

use std::collections::{BTreeMap, BTreeSet};

use orchestrata_schemas::events::{Command, CommandKind, EventRecord, Stream};

use super::decide::Precheck;
use super::load::Stored;
use super::state::KernelState;
use super::KernelError;
use crate::governance::{kernel::request_for, Governance, Request};
use crate::log::EventLog;

/// What the writer folded into governance's facts during one batch.
#[derive(Debug, Default)]
pub(super) struct Folded {
    /// Records of the batch before this index are folded.
    upto: usize,
    /// Per folded record of a fact stream: its index in the batch and the sequence
    /// assumed for it.
    assumed: Vec<(usize, u64)>,
}

impl Folded {
    /// Folds the batch's records not folded yet.
    pub(super) async fn catch_up(&mut self, governance: &Governance, out: &[EventRecord]) {
        if self.upto >= out.len() {
            return;
        }
        let upto = self.upto;
        let assumed = governance.fold_provisional(&out[upto..]).await;
        self.assumed
            .extend(assumed.into_iter().map(|(i, seq)| (upto + i, seq)));
        self.upto = out.len();
    }

    /// After the append: if the log assigned other sequences than assumed (another
    /// appender took one) or a record did not land, the facts are refolded from the
    /// log. Also notes the epoch of a fact stream the facts view had none for.
    pub(super) async fn settle(
        &self,
        governance: &Governance,
        log: &dyn EventLog,
        out: &[EventRecord],
        stored: &Stored,
    ) {
        let mismatch = self.assumed.iter().find(|(i, assumed)| {
            stored
                .positions
                .get(*i)
                .copied()
                .flatten()
                .is_none_or(|landed| landed.sequence != *assumed)
        });
        if let Some((i, assumed)) = mismatch {
            tracing::warn!(
                stream = %out[*i].stream(),
                assumed,
                "governance facts folded ahead of the append do not match the log; refolding them from the log"
            );
            if let Err(e) = governance.resync().await {
                tracing::error!(error = %e, "governance facts could not be refolded from the log; decisions may fail closed");
            }
            return;
        }
        // At most the three fact streams: checked once each, not once per record.
        let streams: BTreeSet<Stream> =
            self.assumed.iter().map(|(i, _)| out[*i].stream()).collect();
        let mut epochs = BTreeMap::new();
        for stream in streams {
            if governance.lacks_epoch(stream).await {
                if let Ok(epoch) = log.epoch(stream).await {
                    epochs.insert(stream, epoch);
                }
            }
        }
        if !epochs.is_empty() {
            governance.note_epochs(epochs).await;
        }
    }
}

/// A priority change names the packet's sender and recipient (`from`, `to`) from the
/// kernel's state: the policy's party check then holds for a packet older than the
/// engine's packet window, which no longer shows it (`governance/fact_window.rs`).
fn with_parties(request: Request, command: &Command, state: &KernelState) -> Request {
    let CommandKind::SetPriority { message_id, .. } = &command.action else {
        return request;
    };
    match state.packet(message_id) {
        Some(p) => request
            .with("from", p.packet.from_agent().to_string())
            .with("to", p.packet.to_agent().to_string()),
        None => request,
    }
}

/// Decides `command` with governance in the writer's batch: refuses first what cannot
/// run whatever the policy says (ERR-006 and kin, so they are answered as themselves),
/// then asks the policy. The decision's event is pushed onto `out` whatever the answer
/// (a denial is recorded too); `Ok` means the command may run.
pub(super) async fn govern(
    governance: &Governance,
    state: &KernelState,
    command: &Command,
    now: chrono::DateTime<chrono::Utc>,
    out: &mut Vec<EventRecord>,
) -> Result<(), KernelError> {
    let Some(request) = request_for(command).map(|r| r.by(command.principal.clone())) else {
        return Ok(());
    };
    if let Some(check) = Precheck::of(command) {
        check.run(state)?;
    }
    let request = with_parties(request, command, state);
    let decided = governance
        .decide_in_batch(&request, now)
        .await
        .map_err(|e| KernelError::GovernanceFailed(e.to_string()))?;
    out.push(decided.record);
    let decision = decided.decision;
    if decision.allowed() {
        return Ok(());
    }
    // A policy that could not answer (engine down or restarting, Prolog error) denies,
    // and says governance was unavailable rather than that it denied.
    if let Some(error) = decision.error {
        return Err(KernelError::GovernanceFailed(error));
    }
    Err(KernelError::Denied {
        decision_id: decision.decision_id,
        result: format!("{:?}", decision.result).to_lowercase(),
        action: request.action,
        resource: request.resource,
        trace: decision.trace,
    })
}
