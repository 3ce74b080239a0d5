//! A view's commit: its changes taken under the view's lock, written to the store on a
//! blocking thread, then confirmed to the view (which may now let go of what the store
//! holds).
//!
//! A runner either waits for the whole commit before it folds again, or — for a view
//! that can tell what a commit took from what changed since
//! ([`View::FOLDS_WHILE_STORING`]) — starts it ([`Commits::start`]), keeps folding
//! while the store writes, and confirms it when the write is done
//! ([`Commits::confirm`]). The confirmation runs on the runner's own task, between two
//! chunks, so it never races the runner's reads of let-go entries before a chunk.
//!
//! Why: the thread view's commit under `cxp.send` load took hundreds of milliseconds,
//! and every send answered in that time waited for it (the answer waits until the
//! thread view holds the packet). Two thirds of a commit is the store's write.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use orchestrata_projections::View;
use orchestrata_schemas::events::Stream;
use tokio::task::{JoinError, JoinHandle};

use super::{ProjectionError, ViewStore};

/// A commit whose changes are taken and whose store write runs.
pub(super) struct InFlight {
    pub(super) started: Instant,
    write: JoinHandle<Result<(), ProjectionError>>,
}

impl InFlight {
    /// Waits until the store write is done (without confirming it).
    pub(super) async fn written(&mut self) -> Result<Result<(), ProjectionError>, JoinError> {
        (&mut self.write).await
    }
}

/// Waits for `flight`'s write when there is one; never ready otherwise (a `select!`
/// branch that stays idle while no commit is in flight).
pub(super) async fn written(
    flight: &mut Option<InFlight>,
) -> Result<Result<(), ProjectionError>, JoinError> {
    match flight {
        Some(f) => f.written().await,
        None => std::future::pending().await,
    }
}

/// The commit bookkeeping of one running view.
pub(super) struct Commits<V> {
    pub(super) view: Arc<RwLock<V>>,
    pub(super) store: ViewStore,
    pub(super) epochs: Arc<BTreeMap<Stream, String>>,
    pub(super) keep_hot: usize,
    /// The next commit writes the whole view (replacing an earlier form, or after a
    /// commit that failed: the changes it took are not in the store).
    pub(super) full: bool,
    /// What the last commit cost, start to confirmation (spaces the next one).
    pub(super) last_cost: Duration,
}

impl<V: View> Commits<V> {
    /// Takes the view's changes (under its write lock) and writes them to the store,
    /// on a blocking thread.
    pub(super) fn start(&mut self) -> InFlight {
        let started = Instant::now();
        let view = self.view.clone();
        let store = self.store.clone();
        let epochs = self.epochs.clone();
        let full = self.full;
        // Whatever happens below, the changes are taken: until a commit succeeds, the
        // next one must be full — unless the view takes them again itself.
        self.full = full || !V::RETAKES_UNCOMMITTED;
        let write = tokio::task::spawn_blocking(move || {
            let (changes, checkpoint) = {
                let mut view = view.write().unwrap_or_else(|p| p.into_inner());
                let changes = view
                    .take_changes(full)
                    .map_err(|e| ProjectionError::Store {
                        path: store.path().display().to_string(),
                        reason: e.to_string(),
                    })?;
                (changes, view.checkpoint().clone())
            };
            store.commit(V::NAME, &changes, &checkpoint, &epochs, full)
        });
        InFlight { started, write }
    }

    /// Confirms a commit whose write ended (`written`, from [`InFlight::written`]) to
    /// the view: it forgets what the commit took and may let go of entries the store
    /// now holds. A failed write is the runner's error.
    pub(super) async fn confirm(
        &mut self,
        started: Instant,
        written: Result<Result<(), ProjectionError>, JoinError>,
    ) -> Result<(), ProjectionError> {
        let task_failed = |e: JoinError| ProjectionError::Task {
            view: V::NAME,
            reason: e.to_string(),
        };
        written.map_err(task_failed)??;
        let view = self.view.clone();
        let keep_hot = self.keep_hot;
        tokio::task::spawn_blocking(move || {
            view.write()
                .unwrap_or_else(|p| p.into_inner())
                .committed(keep_hot);
        })
        .await
        .map_err(task_failed)?;
        self.full = false;
        self.last_cost = started.elapsed();
        tracing::debug!(view = %V::NAME, cost_ms = self.last_cost.as_millis() as u64, "view committed");
        Ok(())
    }

    /// A whole commit: started, written, confirmed.
    pub(super) async fn commit(&mut self) -> Result<(), ProjectionError> {
        let flight = self.start();
        self.finish(flight).await
    }

    /// Confirms `flight` once its write ends.
    pub(super) async fn finish(&mut self, mut flight: InFlight) -> Result<(), ProjectionError> {
        let written = flight.written().await;
        self.confirm(flight.started, written).await
    }
}
