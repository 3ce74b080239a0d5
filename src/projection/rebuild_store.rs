//! `projections rebuild`: a view refolded from the log into the store, committed as it
//! goes, so a rebuild holds what a live runner holds — the `keep_hot` entries touched
//! last and those waiting for a commit — not the whole history, whose every thread and
//! packet would otherwise be held until the end.

use orchestrata_projections::{Checkpoint, View};
use orchestrata_schemas::events::Envelope;

use super::rebuild::{fold_pages, stream_epochs, PageHook, Progress};
use super::runner::{read_back_page, DEFAULT_HOT_ENTRIES};
use super::store::Epochs;
use super::{ProjectionError, ViewStore};
use crate::log::EventLog;

/// How a rebuild into the store bounds its memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RebuildBounds {
    /// Entries a view keeps in memory after each commit ([`View::committed`]); a
    /// runner's `projections.hot_entries`.
    pub keep_hot: usize,
    /// Events folded between two commits.
    pub commit_events: u64,
}

impl Default for RebuildBounds {
    fn default() -> Self {
        RebuildBounds {
            keep_hot: DEFAULT_HOT_ENTRIES,
            commit_events: 1 << 18,
        }
    }
}

/// Drops the stored `V`, refolds it from the log (up to `until`) into the store with
/// the default [`RebuildBounds`], and returns the checkpoint it stored.
pub async fn rebuild_into_store<V: View>(
    log: &dyn EventLog,
    store: &ViewStore,
    until: Option<u64>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Checkpoint, ProjectionError> {
    rebuild_into_store_with::<V>(log, store, until, RebuildBounds::default(), progress).await
}

/// [`rebuild_into_store`] with explicit bounds. The first commit replaces whatever the
/// store held for the view; each later one writes what changed since. Entries the view
/// let go of are read back before an event needs them, as a runner does, so the
/// stored result equals a fold of the whole log in memory.
pub async fn rebuild_into_store_with<V: View>(
    log: &dyn EventLog,
    store: &ViewStore,
    until: Option<u64>,
    bounds: RebuildBounds,
    progress: &mut dyn FnMut(Progress),
) -> Result<Checkpoint, ProjectionError> {
    let epochs = stream_epochs::<V>(log).await?;
    let hook = Committing {
        store: store.clone(),
        epochs,
        bounds,
        since: 0,
        full: true,
    };
    let view: V = fold_pages(log, until, progress, Box::new(hook)).await?;
    Ok(view.checkpoint().clone())
}

/// The fold thread's commits.
struct Committing {
    store: ViewStore,
    epochs: Epochs,
    bounds: RebuildBounds,
    /// Events folded since the last commit.
    since: u64,
    /// Whether the next commit replaces the stored view (until one succeeded).
    full: bool,
}

impl Committing {
    fn commit<V: View>(&mut self, view: &mut V) -> Result<(), ProjectionError> {
        let changes = view
            .take_changes(self.full)
            .map_err(|e| ProjectionError::Store {
                path: self.store.path().display().to_string(),
                reason: e.to_string(),
            })?;
        self.store.commit(
            V::NAME,
            &changes,
            view.checkpoint(),
            &self.epochs,
            self.full,
        )?;
        view.committed(self.bounds.keep_hot);
        self.full = false;
        self.since = 0;
        Ok(())
    }
}

impl<V: View> PageHook<V> for Committing {
    /// A runner's chunk (1,024), or less when commits are closer than that; whole
    /// pages for a view committed only at the end.
    fn chunk_len(&self) -> usize {
        if V::RETAKES_UNCOMMITTED {
            usize::try_from(self.bounds.commit_events)
                .unwrap_or(usize::MAX)
                .min(1024)
        } else {
            usize::MAX
        }
    }

    fn before(&mut self, view: &mut V, page: &[Envelope]) -> Result<(), ProjectionError> {
        self.since += page.len() as u64;
        read_back_page(&self.store, view, page)
    }

    fn after(&mut self, view: &mut V) -> Result<(), ProjectionError> {
        // A rebuild commits on the way only to bound memory: so only views that let
        // entries go once committed (those that take uncommitted changes again), and
        // by the event count, not `View::needs_commit` — asked at every 16,384
        // entries, the thread view's and the graph's commits would dominate the
        // rebuild's time. The graph and the others
        // keep what they keep either way and are stored at the end.
        if V::RETAKES_UNCOMMITTED && self.since >= self.bounds.commit_events {
            self.commit(view)?;
        }
        Ok(())
    }

    fn finish(&mut self, view: &mut V) -> Result<(), ProjectionError> {
        self.commit(view)
    }
}
