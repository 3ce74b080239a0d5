//! The live runner: tail, apply, commit in batches.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use futures::stream::{select_all, StreamExt};
use futures::FutureExt;
use orchestrata_projections::{
    Checkpoint, DecisionIndex, GraphView, PacketIndex, SessionView, StoredError, ThreadView, View,
    VolkView, WorkflowView,
};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

use super::commit::{self, Commits, InFlight};
use super::rebuild::stream_epochs;
use super::{ProjectionError, ViewHandle, ViewStore};
use crate::log::EventLog;

/// Events applied under one write lock at most (keeps readers responsive).
const CHUNK: usize = 1024;

/// A commit takes the view's changes under its write lock (encoding what changed since
/// the last commit; the whole view only for views stored whole, which stay small) and
/// writes them outside it. Spacing commits by 20 times the last one's cost keeps the
/// CPU commits take under 5 % of the time whatever they cost. A crash replays the
/// events since the last commit.
const COMMIT_SPACING: u32 = 20;

/// Rounds of reading let-go entries back before a chunk ([`View::cold_keys`]): the
/// thread view reads four (a thread's index row, the thread, its packets' rows, the
/// packets), and one more for each false positive of a generation's filter (a row
/// not stored; under 1 % each), so 16 is never reached in practice.
const WARM_ROUNDS: usize = 16;

/// When the runner commits a view to its store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunnerConfig {
    /// Commit after this many applied events...
    pub batch_events: usize,
    /// ...or this long after the first uncommitted event, whichever comes first.
    pub batch_interval: Duration,
    /// Entries a view that lets committed entries go keeps in memory (the decision
    /// index: its newest decisions; the thread view: the threads and the packets
    /// touched most recently, this many of each); the others are read from the store
    /// when asked for, or when an event changes them.
    pub hot_entries: usize,
}

impl Default for RunnerConfig {
    /// 10,000 events or 200 ms; 4,096 hot entries.
    fn default() -> Self {
        RunnerConfig {
            batch_events: 10_000,
            batch_interval: Duration::from_millis(200),
            hot_entries: DEFAULT_HOT_ENTRIES,
        }
    }
}

/// [`RunnerConfig::hot_entries`] by default: a few seconds of decisions at full load,
/// a few megabytes.
pub const DEFAULT_HOT_ENTRIES: usize = 4_096;

/// A view being kept up to date by a background task.
pub struct RunningView<V> {
    handle: ViewHandle<V>,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<Result<(), ProjectionError>>,
}

impl<V: View> RunningView<V> {
    /// A handle for reads and waits.
    pub fn handle(&self) -> &ViewHandle<V> {
        &self.handle
    }

    /// Commits what was applied and stops. Returns the task's error if it had failed
    /// (e.g. the log became unreadable).
    pub async fn stop(mut self) -> Result<(), ProjectionError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.task.await {
            Ok(result) => result,
            Err(e) => Err(ProjectionError::Task {
                view: V::NAME,
                reason: e.to_string(),
            }),
        }
    }
}

/// Starts keeping `V` up to date: restores it from `store` (unless its epochs no longer
/// match the log's, in which case it starts empty), then tails every stream it folds
/// from its checkpoint.
pub async fn spawn_view<V: View>(
    log: Arc<dyn EventLog>,
    store: ViewStore,
    config: RunnerConfig,
) -> Result<RunningView<V>, ProjectionError> {
    let epochs = stream_epochs::<V>(log.as_ref()).await?;
    // The first commit writes the view whole unless the store holds it, in this
    // version's form, for these epochs. Anything else stored is replaced — including
    // the entries a full commit that crashed midway left without a checkpoint, which
    // read as no view at all.
    // Loaded entry by entry, letting the older ones go as they are read.
    let (mut view, full) = match store.load_keeping::<V>(config.hot_entries)? {
        Some(loaded) if loaded.epochs == epochs => (loaded.view, !loaded.current),
        _ => (V::default(), true),
    };
    if !full {
        // Everything loaded is in the store in this version's form.
        view.committed(config.hot_entries);
    }
    let mut tails = Vec::new();
    for stream in V::STREAMS {
        let tail = log
            .tail_shared(*stream, view.checkpoint().next(*stream))
            .await
            .map_err(|source| ProjectionError::Log {
                view: V::NAME,
                source,
            })?;
        tails.push(tail);
    }
    let (progress_tx, progress) = watch::channel(view.checkpoint().clone());
    let view = Arc::new(RwLock::new(view));
    let handle = ViewHandle {
        view: view.clone(),
        progress,
        store: store.clone(),
    };
    let (stop, stopped) = oneshot::channel();
    let fold = Fold {
        commits: Commits {
            view,
            store,
            epochs: Arc::new(epochs),
            keep_hot: config.hot_entries,
            full,
            last_cost: Duration::ZERO,
        },
        config,
        progress: progress_tx,
    };
    let task = tokio::spawn(fold.run(select_all(tails), stopped));
    Ok(RunningView {
        handle,
        stop: Some(stop),
        task,
    })
}

/// A running view's task: the view and its store are its commits' (`commit.rs`).
struct Fold<V> {
    config: RunnerConfig,
    progress: watch::Sender<Checkpoint>,
    commits: Commits<V>,
}

impl<V: View> Fold<V> {
    async fn run(
        mut self,
        mut events: futures::stream::SelectAll<crate::log::SharedEnvelopeStream>,
        mut stopped: oneshot::Receiver<()>,
    ) -> Result<(), ProjectionError> {
        let mut pending = 0usize;
        let mut first_pending: Option<Instant> = None;
        let mut last_commit = Instant::now();
        // Set when the view asks to be committed at once (View::needs_commit).
        let mut urgent = false;
        // A commit whose store write runs while this task folds on (only for a view
        // that folds while storing; see `commit.rs`).
        let mut in_flight: Option<InFlight> = None;
        loop {
            // Commit when the batch is full or old, but never more often than
            // COMMIT_SPACING times the cost of the last commit (large views commit less
            // often, not slower) — unless the view asks for it now.
            let due = first_pending.map(|t| t + self.config.batch_interval);
            let spaced = last_commit + self.commits.last_cost * COMMIT_SPACING;
            if pending > 0
                && in_flight.is_none()
                && (urgent
                    || (pending >= self.config.batch_events
                        || due.is_some_and(|d| Instant::now() >= d))
                        && Instant::now() >= spaced)
            {
                if V::FOLDS_WHILE_STORING {
                    in_flight = Some(self.commits.start());
                } else {
                    self.commits.commit().await?;
                    last_commit = Instant::now();
                }
                pending = 0;
                first_pending = None;
                urgent = false;
                continue;
            }
            // While a commit is in flight the next waits for it, not for a timer.
            let wake = due.map(|d| d.max(spaced)).filter(|_| in_flight.is_none());
            tokio::select! {
                _ = &mut stopped => break,
                _ = sleep_until(wake) => {}
                written = commit::written(&mut in_flight) => {
                    if let Some(flight) = in_flight.take() {
                        self.commits.confirm(flight.started, written).await?;
                        last_commit = Instant::now();
                    }
                }
                next = events.next() => {
                    let Some(first) = next else { break };
                    let mut chunk = vec![first.map_err(|source| ProjectionError::Log { view: V::NAME, source })?];
                    while chunk.len() < CHUNK {
                        match events.next().now_or_never() {
                            Some(Some(item)) => chunk.push(item.map_err(|source| ProjectionError::Log { view: V::NAME, source })?),
                            _ => break,
                        }
                    }
                    let applied = chunk.len();
                    self.warm(&chunk)?;
                    let checkpoint = {
                        let mut view = self.commits.view.write().unwrap_or_else(|p| p.into_inner());
                        for envelope in chunk {
                            // Moved in when no other tail holds it; folded by
                            // reference when it is shared.
                            match Arc::try_unwrap(envelope) {
                                Ok(owned) => view.apply_owned(owned),
                                Err(shared) => view.apply(&shared),
                            };
                        }
                        urgent = view.needs_commit();
                        view.checkpoint().clone()
                    };
                    self.progress.send_replace(checkpoint);
                    pending += applied;
                    first_pending.get_or_insert_with(Instant::now);
                }
            }
        }
        if let Some(flight) = in_flight.take() {
            self.commits.finish(flight).await?;
        }
        if pending > 0 {
            self.commits.commit().await?;
        }
        Ok(())
    }

    /// Reads back from the store the entries the view let go of that `chunk` changes
    /// ([`View::cold_keys`]), before the chunk is applied: the fold never reads the
    /// store. An entry read back may name more (an archived thread's other packets),
    /// so this asks again until the view wants nothing. Most chunks want nothing (one
    /// hash look-up per event); a read is a keyed get on the store's page cache.
    fn warm(
        &self,
        chunk: &[Arc<orchestrata_schemas::events::Envelope>],
    ) -> Result<(), ProjectionError> {
        read_back::<V>(
            &self.commits.store,
            |keys| {
                let view = self.commits.view.read().unwrap_or_else(|p| p.into_inner());
                for envelope in chunk {
                    view.cold_keys(envelope, keys);
                }
            },
            |entries| {
                self.commits
                    .view
                    .write()
                    .unwrap_or_else(|p| p.into_inner())
                    .warm(entries)
            },
        )
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

/// All the views, kept live together on one log.
pub struct Projections {
    threads: RunningView<ThreadView>,
    sessions: RunningView<SessionView>,
    volks: RunningView<VolkView>,
    decisions: RunningView<DecisionIndex>,
    graph: RunningView<GraphView>,
    packets: RunningView<PacketIndex>,
    workflows: RunningView<WorkflowView>,
}

impl Projections {
    /// Restores and starts every view (see [`spawn_view`]).
    pub async fn start(
        log: Arc<dyn EventLog>,
        store: ViewStore,
        config: RunnerConfig,
    ) -> Result<Self, ProjectionError> {
        Ok(Projections {
            threads: spawn_view(log.clone(), store.clone(), config).await?,
            sessions: spawn_view(log.clone(), store.clone(), config).await?,
            volks: spawn_view(log.clone(), store.clone(), config).await?,
            decisions: spawn_view(log.clone(), store.clone(), config).await?,
            graph: spawn_view(log.clone(), store.clone(), config).await?,
            packets: spawn_view(log.clone(), store.clone(), config).await?,
            workflows: spawn_view(log, store, config).await?,
        })
    }

    /// Packets and threads.
    pub fn threads(&self) -> &ViewHandle<ThreadView> {
        self.threads.handle()
    }

    /// Sessions and portfolios.
    pub fn sessions(&self) -> &ViewHandle<SessionView> {
        self.sessions.handle()
    }

    /// Volks.
    pub fn volks(&self) -> &ViewHandle<VolkView> {
        self.volks.handle()
    }

    /// Governance decisions.
    pub fn decisions(&self) -> &ViewHandle<DecisionIndex> {
        self.decisions.handle()
    }

    /// The knowledge graph (`knowledge.nodes`, `knowledge.relationships`, the Neo4j sink).
    pub fn graph(&self) -> &ViewHandle<GraphView> {
        self.graph.handle()
    }

    /// Who and what each packet concerns: what subscription and replay filters match
    /// a packet's transitions on.
    pub fn packets(&self) -> &ViewHandle<PacketIndex> {
        self.packets.handle()
    }

    /// Workflow runs (`workflow.get`).
    pub fn workflows(&self) -> &ViewHandle<WorkflowView> {
        self.workflows.handle()
    }

    /// Commits and stops every view; the first error, if any.
    pub async fn stop(self) -> Result<(), ProjectionError> {
        let results = [
            self.threads.stop().await,
            self.sessions.stop().await,
            self.volks.stop().await,
            self.decisions.stop().await,
            self.graph.stop().await,
            self.packets.stop().await,
            self.workflows.stop().await,
        ];
        results.into_iter().collect()
    }
}

/// [`read_back`] of the entries folding `page` needs, for a view held directly (a
/// rebuild's fold thread, a view opened for reads outside a runner).
pub(super) fn read_back_page<V: View>(
    store: &ViewStore,
    view: &mut V,
    page: &[orchestrata_schemas::events::Envelope],
) -> Result<(), ProjectionError> {
    // Two closures reach the view, one to ask and one to hand back.
    let view = std::cell::RefCell::new(view);
    read_back::<V>(
        store,
        |keys| {
            let view = view.borrow();
            for envelope in page {
                view.cold_keys(envelope, keys);
            }
        },
        |entries| view.borrow_mut().warm(entries),
    )
}

/// Reads back from `store` the let-go entries of view `V` that `wanted` names and hands
/// them to `warm`, asking again until nothing more is wanted (an entry read back may
/// name more) — at most [`WARM_ROUNDS`] times. Shared by the runner and the rebuild.
pub(super) fn read_back<V: View>(
    store: &ViewStore,
    mut wanted: impl FnMut(&mut Vec<Vec<u8>>),
    mut warm: impl FnMut(Vec<orchestrata_projections::stored::StoredEntry>) -> Result<(), StoredError>,
) -> Result<(), ProjectionError> {
    for _ in 0..WARM_ROUNDS {
        let mut keys = Vec::new();
        wanted(&mut keys);
        if keys.is_empty() {
            return Ok(());
        }
        keys.sort_unstable();
        keys.dedup();
        // A key the store does not hold comes back with an empty value (no stored
        // value is empty): the view knows whether it may be missing (an index row it
        // was not sure of) or must not (an entry it let go of).
        let mut entries = Vec::with_capacity(keys.len());
        for key in keys {
            let value = store.entry(V::NAME, &key)?.unwrap_or_default();
            entries.push((key, value));
        }
        warm(entries).map_err(|e| store.corrupt(V::NAME, e.to_string()))?;
    }
    Err(store.corrupt(
        V::NAME,
        format!("still wants entries back after {WARM_ROUNDS} reads"),
    ))
}
