//! Folding from the log in pages: catch-up, rebuild, time travel.

use std::collections::BTreeMap;
use std::time::Instant;

use orchestrata_projections::View;
use orchestrata_schemas::events::Stream;

use super::{ProjectionError, ViewStore};
use crate::log::EventLog;

/// Events read from the log per page.
const PAGE: usize = 8192;

/// Progress of a fold from the log, reported after every page.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    /// Events applied so far.
    pub done: u64,
    /// Events to apply in total (known before starting).
    pub total: u64,
    /// Seconds since the fold started.
    pub elapsed_secs: f64,
}

impl Progress {
    /// Events per second so far.
    pub fn rate(&self) -> f64 {
        if self.elapsed_secs > 0.0 {
            self.done as f64 / self.elapsed_secs
        } else {
            0.0
        }
    }
}

/// The current epoch of each stream `V` folds.
pub async fn stream_epochs<V: View>(
    log: &dyn EventLog,
) -> Result<BTreeMap<Stream, String>, ProjectionError> {
    let mut epochs = BTreeMap::new();
    for stream in V::STREAMS {
        let epoch = log
            .epoch(*stream)
            .await
            .map_err(|source| ProjectionError::Log {
                view: V::NAME,
                source,
            })?;
        epochs.insert(*stream, epoch);
    }
    Ok(epochs)
}

/// Applies to `view` every event of its streams after its checkpoint, up to and
/// including sequence `until` of each stream (`None`: to the current end of the log).
/// Returns the number of events read.
pub async fn catch_up<V: View>(
    log: &dyn EventLog,
    view: &mut V,
    until: Option<u64>,
    progress: &mut dyn FnMut(Progress),
) -> Result<u64, ProjectionError> {
    let log_error = |source| ProjectionError::Log {
        view: V::NAME,
        source,
    };
    let mut ranges = Vec::new();
    let mut total = 0;
    for stream in V::STREAMS {
        let bounds = log.bounds(*stream).await.map_err(log_error)?;
        let Some(last) = bounds.last else { continue };
        let end = until.map_or(last, |u| u.min(last));
        let from = view.checkpoint().next(*stream);
        if from <= end {
            total += end - from + 1;
            ranges.push((*stream, from, end));
        }
    }
    let started = Instant::now();
    let mut done = 0;
    for (stream, mut from, end) in ranges {
        while from <= end {
            let page = log
                .read(stream, from, Some(end), PAGE)
                .await
                .map_err(log_error)?;
            let Some(last) = page.last() else { break };
            from = last.sequence + 1;
            for envelope in &page {
                view.apply(envelope);
            }
            done += page.len() as u64;
            progress(Progress {
                done,
                total,
                elapsed_secs: started.elapsed().as_secs_f64(),
            });
        }
    }
    Ok(done)
}

/// Folds a fresh view from the start of the log up to `until` (inclusive, on each
/// stream the view folds; `None`: everything). `--as-of` and `rebuild --until` are this.
pub async fn rebuild<V: View>(
    log: &dyn EventLog,
    until: Option<u64>,
    progress: &mut dyn FnMut(Progress),
) -> Result<V, ProjectionError> {
    let mut view = V::default();
    catch_up(log, &mut view, until, progress).await?;
    Ok(view)
}

/// Drops the stored `V`, refolds it from the log (up to `until`) and stores the result
/// with its checkpoint. Returns the view.
pub async fn rebuild_into_store<V: View>(
    log: &dyn EventLog,
    store: &ViewStore,
    until: Option<u64>,
    progress: &mut dyn FnMut(Progress),
) -> Result<V, ProjectionError> {
    store.remove(V::NAME)?;
    let epochs = stream_epochs::<V>(log).await?;
    let view = rebuild::<V>(log, until, progress).await?;
    store.save(&view, &epochs)?;
    Ok(view)
}
