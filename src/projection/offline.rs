//! [`open_view`]: a view opened from its store for reads outside a runner
//! (`projections show --id`); [`find_decision`], a decision found by its id that way.
//!
//! [`ViewStore::load`] decodes every stored entry into memory: on a 1.3 M-send history
//! the thread view took 43 s and 4.2 GB to show one thread, the decision index 14 s
//! and 2.3 GB. A view opened here holds what a runner holds after a restart — the
//! `keep_hot` entries its restorer keeps — catches up with the log reading back what
//! each page needs, and answers through a [`ViewHandle`], whose reads find the entries
//! the view let go of in the store.

use std::sync::{Arc, RwLock};

use orchestrata_projections::decision::DecisionEntry;
use orchestrata_projections::{DecisionIndex, View, ViewName};
use tokio::sync::watch;
use uuid::Uuid;

use super::rebuild::{catch_up_reading_back, stream_epochs};
use super::{ProjectionError, ViewHandle, ViewStore};
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
    let mut view = match store.load_keeping::<V>(keep_hot)? {
        Some(loaded) if loaded.epochs == epochs => loaded.view,
        _ => V::default(),
    };
    catch_up_reading_back(log, store, &mut view).await?;
    // No runner moves it on: the handle's progress stays where the fold ended.
    let (_, progress) = watch::channel(view.checkpoint().clone());
    Ok(ViewHandle {
        view: Arc::new(RwLock::new(view)),
        progress,
        store: store.clone(),
    })
}

/// The decision recorded with `decision_id`, as `projections show --view decision --id`
/// prints it: the index opened as [`open_view`] opens it (`keep_hot` bodies in memory),
/// then, if the id is not among those, the stored decisions read one at a time until it
/// is found. No key holds a decision's id, so an old or unknown id costs a scan of the
/// stored decisions — but never more memory than a runner's.
pub async fn find_decision(
    log: &dyn EventLog,
    store: &ViewStore,
    keep_hot: usize,
    decision_id: &Uuid,
) -> Result<Option<DecisionEntry>, ProjectionError> {
    let index = open_view::<DecisionIndex>(log, store, keep_hot).await?;
    let hot = index
        .read()
        .decision(decision_id)
        .and_then(|d| d.body.cloned());
    if hot.is_some() {
        return Ok(hot);
    }
    store.find_entry(ViewName::Decision, |key, value| {
        let entry = DecisionIndex::decision_of_entry(key, value).map_err(|e| e.to_string())?;
        Ok(entry.filter(|e| e.decision.decision_id == *decision_id))
    })
}
