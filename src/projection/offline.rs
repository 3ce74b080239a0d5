//! Views opened from their store for reads outside a runner (`projections show --id`):
//! [`open_view`] as the log stands now, [`open_view_as_of`] as it stood at a sequence,
//! and [`find_decision`](super::find_decision), a decision found by its id in either.
//!
//! [`ViewStore::load`] decodes every stored entry into memory, so its time and memory
//! follow the whole history, for a read of one entry. A view opened here holds what a
//! runner holds after a restart — the
//! `keep_hot` entries its restorer keeps — catches up with the log reading back what
//! each page needs, and answers through a [`ViewHandle`], whose reads find the entries
//! the view let go of in the store.

use std::path::Path;
use std::sync::{Arc, RwLock};

use orchestrata_projections::View;
use tokio::sync::watch;

use super::rebuild::{catch_up_reading_back, stream_epochs, Progress};
use super::rebuild_store::{rebuild_into_store_with, RebuildBounds};
use super::{Epochs, ProjectionError, ViewHandle, ViewStore};
use crate::log::EventLog;

/// The stored `V`, keeping `keep_hot` entries in memory, brought up to the end of the
/// log; a view stored from other streams (their epochs differ) or none stored is
/// folded from the start. Reads the store, never writes it.
pub async fn open_view<V: View>(
    log: &dyn EventLog,
    store: &ViewStore,
    keep_hot: usize,
) -> Result<ViewHandle<V>, ProjectionError> {
    let epochs = stream_epochs::<V>(log).await?;
    opened(log, store, &epochs, keep_hot, None).await
}

/// `V` as it was once every stream it folds had reached sequence `as_of` (`--as-of`),
/// with the memory of [`open_view`]:
/// - when the stored view has not passed `as_of` on any stream (recent history), it is
///   opened from `store` and caught up to `as_of` — as fast as [`open_view`];
/// - otherwise the view is folded from the start of the log into a scratch store in
///   `scratch` (committed as it goes, as `projections rebuild` does; `progress`
///   reports it), then opened from there. The handle reads that store: keep `scratch`
///   until it is dropped. `store` is never written.
pub async fn open_view_as_of<V: View>(
    log: &dyn EventLog,
    store: &ViewStore,
    keep_hot: usize,
    as_of: u64,
    scratch: &Path,
    progress: &mut dyn FnMut(Progress),
) -> Result<ViewHandle<V>, ProjectionError> {
    let epochs = stream_epochs::<V>(log).await?;
    let before = store.checkpoint(V::NAME)?.is_some_and(|stored| {
        stored.epochs == epochs
            && V::STREAMS.iter().all(|stream| {
                stored
                    .checkpoint
                    .last(*stream)
                    .is_none_or(|last| last <= as_of)
            })
    });
    if before {
        return opened(log, store, &epochs, keep_hot, Some(as_of)).await;
    }
    let scratch = ViewStore::open(scratch)?;
    let bounds = RebuildBounds {
        keep_hot,
        ..RebuildBounds::default()
    };
    rebuild_into_store_with::<V>(log, &scratch, Some(as_of), bounds, progress).await?;
    opened(log, &scratch, &epochs, keep_hot, Some(as_of)).await
}

/// `V` restored from `store` keeping `keep_hot` entries (folded from the start if the
/// store's epochs are not the log's `epochs`), caught up to `until`.
async fn opened<V: View>(
    log: &dyn EventLog,
    store: &ViewStore,
    epochs: &Epochs,
    keep_hot: usize,
    until: Option<u64>,
) -> Result<ViewHandle<V>, ProjectionError> {
    let mut view = match store.load_keeping::<V>(keep_hot)? {
        Some(loaded) if loaded.epochs == *epochs => loaded.view,
        _ => V::default(),
    };
    catch_up_reading_back(log, store, &mut view, until).await?;
    // No runner moves it on: the handle's progress stays where the fold ended.
    let (_, progress) = watch::channel(view.checkpoint().clone());
    Ok(ViewHandle {
        view: Arc::new(RwLock::new(view)),
        progress,
        store: store.clone(),
    })
}
