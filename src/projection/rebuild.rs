//! Folding from the log in pages: catch-up, rebuild, time travel.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use orchestrata_projections::{Checkpoint, View};
use orchestrata_schemas::events::{Envelope, Stream};
use tokio::sync::{mpsc, oneshot};

use super::runner::read_back_page;
use super::{ProjectionError, ViewStore};
use crate::log::{EventLog, LogError};

/// Events read from the log per page.
const PAGE: usize = 8192;

/// Pages a [`rebuild`] reads ahead of its fold thread: enough to keep both threads
/// busy, few enough to bound memory (~`PIPELINE * PAGE` decoded events).
const PIPELINE: usize = 4;

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

/// One stream's part of a fold: sequences `from..=to`.
struct Range {
    stream: Stream,
    from: u64,
    to: u64,
}

/// What a view at `checkpoint` still has to fold, per stream, up to `until` (inclusive;
/// `None`: the current end of the log), and how many events that is in total.
async fn plan<V: View>(
    log: &dyn EventLog,
    checkpoint: &Checkpoint,
    until: Option<u64>,
) -> Result<(Vec<Range>, u64), ProjectionError> {
    let mut ranges = Vec::new();
    let mut total = 0;
    for stream in V::STREAMS {
        let bounds = log.bounds(*stream).await.map_err(log_error::<V>)?;
        let Some(last) = bounds.last else { continue };
        let to = until.map_or(last, |u| u.min(last));
        let from = checkpoint.next(*stream);
        if from <= to {
            total += to - from + 1;
            ranges.push(Range {
                stream: *stream,
                from,
                to,
            });
        }
    }
    Ok((ranges, total))
}

fn log_error<V: View>(source: LogError) -> ProjectionError {
    ProjectionError::Log {
        view: V::NAME,
        source,
    }
}

/// The pages of a fold, read one after the other: every range in order, [`PAGE`]
/// events at a time.
struct Pages<'a> {
    log: &'a dyn EventLog,
    ranges: std::vec::IntoIter<Range>,
    current: Option<Range>,
}

impl<'a> Pages<'a> {
    fn new(log: &'a dyn EventLog, ranges: Vec<Range>) -> Self {
        Pages {
            log,
            ranges: ranges.into_iter(),
            current: None,
        }
    }

    /// The next page, or `None` at the end of the last range.
    async fn next<V: View>(&mut self) -> Result<Option<Vec<Envelope>>, ProjectionError> {
        loop {
            let range = match &mut self.current {
                Some(range) if range.from <= range.to => range,
                _ => match self.ranges.next() {
                    Some(range) => {
                        self.current = Some(range);
                        continue;
                    }
                    None => return Ok(None),
                },
            };
            let page = self
                .log
                .read(range.stream, range.from, Some(range.to), PAGE)
                .await
                .map_err(log_error::<V>)?;
            match page.last() {
                Some(last) => {
                    range.from = last.sequence + 1;
                    return Ok(Some(page));
                }
                None => self.current = None,
            }
        }
    }
}

/// Applies to `view` every event of its streams after its checkpoint, up to and
/// including sequence `until` of each stream (`None`: to the current end of the log).
/// Returns the number of events read. Reads and folds in turn on the caller's task
/// (the view is borrowed); [`rebuild`] overlaps the two.
pub async fn catch_up<V: View>(
    log: &dyn EventLog,
    view: &mut V,
    until: Option<u64>,
    progress: &mut dyn FnMut(Progress),
) -> Result<u64, ProjectionError> {
    fold_tail(log, None, view, until, progress).await
}

/// [`catch_up`] for a view restored keeping only some of its entries in memory
/// ([`ViewStore::load_keeping`]): before each page is applied, the entries it needs
/// are read back from `store`, as a runner does; up to `until` as there. Returns the
/// events applied.
pub(super) async fn catch_up_reading_back<V: View>(
    log: &dyn EventLog,
    store: &ViewStore,
    view: &mut V,
    until: Option<u64>,
) -> Result<u64, ProjectionError> {
    fold_tail(log, Some(store), view, until, &mut |_| {}).await
}

/// The loop of both catch-ups: page after page from the view's checkpoint, each
/// preceded by a read-back from `store` when there is one.
async fn fold_tail<V: View>(
    log: &dyn EventLog,
    store: Option<&ViewStore>,
    view: &mut V,
    until: Option<u64>,
    progress: &mut dyn FnMut(Progress),
) -> Result<u64, ProjectionError> {
    let started = Instant::now();
    let (ranges, total) = plan::<V>(log, view.checkpoint(), until).await?;
    let mut pages = Pages::new(log, ranges);
    let mut done = 0;
    while let Some(page) = pages.next::<V>().await? {
        done += page.len() as u64;
        if let Some(store) = store {
            read_back_page(store, view, &page)?;
        }
        for envelope in page {
            view.apply_owned(envelope);
        }
        progress(Progress {
            done,
            total,
            elapsed_secs: started.elapsed().as_secs_f64(),
        });
    }
    Ok(done)
}

/// Folds a fresh view from the start of the log up to `until` (inclusive, on each
/// stream the view folds; `None`: everything). `--as-of` and `rebuild --until` are this.
///
/// Reading the log (storage and Avro decoding) and folding run on two threads: this
/// task reads pages and passes them, `PIPELINE` pages ahead at most, to a fold
/// thread that applies them in log order, moving each envelope into the view
/// ([`View::apply_owned`]). The fold itself stays the one pure, sequential `apply`;
/// only the decoding runs ahead of it. Progress counts applied events.
pub async fn rebuild<V: View>(
    log: &dyn EventLog,
    until: Option<u64>,
    progress: &mut dyn FnMut(Progress),
) -> Result<V, ProjectionError> {
    fold_pages(log, until, progress, Box::new(KeepAll)).await
}

/// What the fold thread of [`fold_pages`] does around each page (or part of one): read back entries
/// the view let go of before it, commit after it.
pub(super) trait PageHook<V>: Send {
    /// Events applied between a `before` and an `after` at most (a page is split).
    fn chunk_len(&self) -> usize;
    /// Before `page` is applied to `view`.
    fn before(&mut self, view: &mut V, page: &[Envelope]) -> Result<(), ProjectionError>;
    /// After `page` was applied.
    fn after(&mut self, view: &mut V) -> Result<(), ProjectionError>;
    /// After the last page (also when there was none).
    fn finish(&mut self, view: &mut V) -> Result<(), ProjectionError>;
}

/// The hook of a fold that keeps the whole view in memory.
struct KeepAll;

impl<V> PageHook<V> for KeepAll {
    fn chunk_len(&self) -> usize {
        PAGE
    }
    fn before(&mut self, _: &mut V, _: &[Envelope]) -> Result<(), ProjectionError> {
        Ok(())
    }
    fn after(&mut self, _: &mut V) -> Result<(), ProjectionError> {
        Ok(())
    }
    fn finish(&mut self, _: &mut V) -> Result<(), ProjectionError> {
        Ok(())
    }
}

/// [`rebuild`]'s pipeline with `hook` called around each page on the fold thread.
pub(super) async fn fold_pages<V: View>(
    log: &dyn EventLog,
    until: Option<u64>,
    progress: &mut dyn FnMut(Progress),
    mut hook: Box<dyn PageHook<V>>,
) -> Result<V, ProjectionError> {
    let started = Instant::now();
    let (ranges, total) = plan::<V>(log, &Checkpoint::default(), until).await?;
    let (pages, mut incoming) = mpsc::channel::<Vec<Envelope>>(PIPELINE);
    let applied = Arc::new(AtomicU64::new(0));
    let (finished, folded) = oneshot::channel::<Result<V, ProjectionError>>();
    let counter = applied.clone();
    std::thread::Builder::new()
        .name(format!("fold-{}", V::NAME))
        .spawn(move || {
            let mut view = V::default();
            let mut outcome = Ok(());
            let chunk = hook.chunk_len().max(1);
            'pages: while let Some(page) = incoming.blocking_recv() {
                // A page no longer than a chunk is applied as it came (no copy).
                let (mut whole, mut parts) = if page.len() <= chunk {
                    (Some(page), Vec::new().into_iter())
                } else {
                    (None, page.into_iter())
                };
                loop {
                    let part: Vec<Envelope> = match whole.take() {
                        Some(page) => page,
                        None => parts.by_ref().take(chunk).collect(),
                    };
                    if part.is_empty() {
                        break;
                    }
                    let n = part.len() as u64;
                    outcome = hook.before(&mut view, &part);
                    if outcome.is_err() {
                        break 'pages;
                    }
                    for envelope in part {
                        view.apply_owned(envelope);
                    }
                    counter.fetch_add(n, Ordering::Release);
                    outcome = hook.after(&mut view);
                    if outcome.is_err() {
                        break 'pages;
                    }
                }
            }
            let outcome = outcome.and_then(|()| hook.finish(&mut view));
            // Whatever the hook holds (a store handle) is released before the caller
            // hears the fold is done, so it can reopen the store at once.
            drop(hook);
            // The receiver is gone only if the rebuild was abandoned: nothing to report.
            let _ = finished.send(outcome.map(|()| view));
        })
        .map_err(|e| ProjectionError::Task {
            view: V::NAME,
            reason: format!("cannot start the fold thread: {e}"),
        })?;
    let mut reader = Pages::new(log, ranges);
    while let Some(page) = reader.next::<V>().await? {
        if pages.send(page).await.is_err() {
            break; // the fold thread is gone: reported below
        }
        progress(Progress {
            done: applied.load(Ordering::Acquire),
            total,
            elapsed_secs: started.elapsed().as_secs_f64(),
        });
    }
    drop(pages); // end of input: the fold thread finishes its queue and hands the view back
    let view = folded.await.map_err(|_| ProjectionError::Task {
        view: V::NAME,
        reason: "the fold thread stopped before the end of the log (it panicked)".into(),
    })??;
    progress(Progress {
        done: applied.load(Ordering::Acquire),
        total,
        elapsed_secs: started.elapsed().as_secs_f64(),
    });
    Ok(view)
}
