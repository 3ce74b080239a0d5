//! `orchestrata projections ...`: rebuild, inspect and print the views.
//!
//! - `rebuild [--view NAME|all] [--until SEQ]`: drop views and refold them from the log
//!   (a progress bar with events/s and ETA on a terminal, plain lines otherwise).
//! - `status`: each view's stored checkpoint and lag behind the log, per stream.
//! - `show --view NAME [--id ID] [--as-of SEQ]`: a view (or one entry of it) as JSON,
//!   caught up with the log, or folded from scratch up to `SEQ` (time travel).

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use orchestrata_projections::{
    DecisionIndex, GraphView, PacketIndex, SessionView, ThreadView, View, ViewName, VolkView,
    WorkflowView,
};
use orchestrata_schemas::events::Stream;
use serde_json::json;

use super::LogArgs;
use crate::log::{self, EventLog};
use crate::projection::{self, Progress, Projections, RunnerConfig, ViewHandle, ViewStore};

/// `orchestrata projections ...`.
#[derive(Debug, Subcommand)]
pub enum ProjectionsCommand {
    /// Drop views and refold them from the log.
    Rebuild(RebuildArgs),
    /// Each view's checkpoint and lag behind the log, per stream.
    Status(StoreArgs),
    /// Print a view, or one entry of it, as JSON.
    Show(ShowArgs),
    /// Test hook: run the live projection runner until killed, printing progress.
    #[command(name = "__run", hide = true)]
    Run(RunArgs),
}

/// The log flags plus where views are stored.
#[derive(Debug, Args)]
pub struct StoreArgs {
    /// View store directory [default: <data-dir>/views, or ./data/views with --kafka].
    #[arg(long, value_name = "DIR")]
    views_dir: Option<PathBuf>,
}

impl StoreArgs {
    async fn open(&self, log_args: &LogArgs) -> anyhow::Result<(Arc<dyn EventLog>, ViewStore)> {
        let config = log_args.config()?;
        let log = log::open(&config).await.context("opening the event log")?;
        let dir = self
            .views_dir
            .clone()
            .unwrap_or_else(|| projection::views_dir(&config));
        let store = ViewStore::open(&dir).context("opening the view store")?;
        Ok((log, store))
    }
}

/// Which views `rebuild` handles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ViewChoice {
    /// Every view.
    All,
    /// One view.
    One(ViewName),
}

fn parse_choice(s: &str) -> Result<ViewChoice, String> {
    if s == "all" {
        return Ok(ViewChoice::All);
    }
    s.parse()
        .map(ViewChoice::One)
        .map_err(|e| format!("{e}, or all"))
}

/// Arguments of `projections rebuild`.
#[derive(Debug, Args)]
pub struct RebuildArgs {
    #[command(flatten)]
    store: StoreArgs,
    /// thread, session, volk, decision, graph or all.
    #[arg(long, default_value = "all", value_parser = parse_choice)]
    view: ViewChoice,
    /// Stop at this sequence (inclusive) of each stream a view folds.
    #[arg(long, value_name = "SEQ")]
    until: Option<u64>,
}

/// Arguments of `projections show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    #[command(flatten)]
    store: StoreArgs,
    /// thread, session, volk, decision or graph.
    #[arg(long)]
    view: ViewName,
    /// One entry: thread id, session id, Volk alias, decision id or graph node id.
    #[arg(long)]
    id: Option<String>,
    /// Fold from scratch up to this sequence (inclusive) of each stream: the view as it
    /// was then.
    #[arg(long, value_name = "SEQ")]
    as_of: Option<u64>,
}

/// Arguments of the hidden `projections __run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    store: StoreArgs,
    /// Commit after this many events.
    #[arg(long, default_value_t = 10_000)]
    batch_events: usize,
    /// Or after this many milliseconds.
    #[arg(long, default_value_t = 200)]
    batch_ms: u64,
}

/// Runs `orchestrata projections ...`.
pub(super) async fn run(command: ProjectionsCommand, log_args: LogArgs) -> anyhow::Result<()> {
    let l = &log_args;
    match command {
        ProjectionsCommand::Rebuild(args) => rebuild(args, l).await,
        ProjectionsCommand::Status(args) => status(args, l).await,
        ProjectionsCommand::Show(args) => show(args, l).await,
        ProjectionsCommand::Run(args) => run_live(args, l).await,
    }
}

async fn rebuild(args: RebuildArgs, log_args: &LogArgs) -> anyhow::Result<()> {
    let (log, store) = args.store.open(log_args).await?;
    let names = match args.view {
        ViewChoice::All => ViewName::ALL.to_vec(),
        ViewChoice::One(name) => vec![name],
    };
    for name in names {
        let started = Instant::now();
        let mut reporter = Reporter::new(name);
        let events = {
            let log = log.as_ref();
            let progress = &mut |p: Progress| reporter.report(p);
            match name {
                ViewName::Thread => {
                    rebuilt::<ThreadView>(log, &store, args.until, progress).await?
                }
                ViewName::Session => {
                    rebuilt::<SessionView>(log, &store, args.until, progress).await?
                }
                ViewName::Volk => rebuilt::<VolkView>(log, &store, args.until, progress).await?,
                ViewName::Decision => {
                    rebuilt::<DecisionIndex>(log, &store, args.until, progress).await?
                }
                ViewName::Graph => rebuilt::<GraphView>(log, &store, args.until, progress).await?,
                ViewName::Packet => {
                    rebuilt::<PacketIndex>(log, &store, args.until, progress).await?
                }
                ViewName::Workflow => {
                    rebuilt::<WorkflowView>(log, &store, args.until, progress).await?
                }
            }
        };
        reporter.finish();
        let secs = started.elapsed().as_secs_f64();
        writeln!(
            std::io::stdout(),
            "rebuilt {name}: {events} events in {secs:.2} s ({:.0} events/s)",
            if secs > 0.0 {
                events as f64 / secs
            } else {
                0.0
            }
        )?;
    }
    Ok(())
}

async fn rebuilt<V: View>(
    log: &dyn EventLog,
    store: &ViewStore,
    until: Option<u64>,
    progress: &mut dyn FnMut(Progress),
) -> anyhow::Result<u64> {
    let checkpoint = projection::rebuild_into_store::<V>(log, store, until, progress).await?;
    let events = checkpoint.iter().map(|(_, last)| last + 1).sum();
    Ok(events)
}

/// A progress bar on a terminal; a line per second otherwise.
struct Reporter {
    name: ViewName,
    bar: Option<ProgressBar>,
    last_line: Option<Instant>,
    /// Lines go to stderr (`show` prints its answer on stdout).
    to_stderr: bool,
}

impl Reporter {
    /// `rebuild`'s: a bar when stdout is a terminal, lines on stdout otherwise.
    fn new(name: ViewName) -> Self {
        Self::on(name, std::io::stdout().is_terminal(), false)
    }

    /// `show --as-of`'s fold: a bar when stderr is a terminal, lines on stderr
    /// otherwise; stdout is the answer's.
    fn on_stderr(name: ViewName) -> Self {
        Self::on(name, std::io::stderr().is_terminal(), true)
    }

    fn on(name: ViewName, terminal: bool, to_stderr: bool) -> Self {
        let bar = terminal.then(|| {
            let bar = ProgressBar::new(0);
            bar.set_style(
                ProgressStyle::with_template(
                    "{prefix:>8} [{bar:40}] {pos}/{len} events {per_sec} eta {eta}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
            );
            bar.set_prefix(name.as_str());
            bar
        });
        Reporter {
            name,
            bar,
            last_line: None,
            to_stderr,
        }
    }

    fn report(&mut self, p: Progress) {
        if let Some(bar) = &self.bar {
            bar.set_length(p.total);
            bar.set_position(p.done);
            return;
        }
        let due = self
            .last_line
            .is_none_or(|t| t.elapsed() >= Duration::from_secs(1));
        if due || p.done == p.total {
            self.last_line = Some(Instant::now());
            let rate = p.rate();
            let eta = if rate > 0.0 {
                (p.total - p.done) as f64 / rate
            } else {
                0.0
            };
            let line = format!(
                "rebuild {}: {}/{} events, {:.0} events/s, eta {:.1} s",
                self.name, p.done, p.total, rate, eta
            );
            if self.to_stderr {
                eprintln!("{line}");
            } else {
                let _ = writeln!(std::io::stdout(), "{line}");
            }
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

async fn status(args: StoreArgs, log_args: &LogArgs) -> anyhow::Result<()> {
    let (log, store) = args.open(log_args).await?;
    writeln!(
        std::io::stdout(),
        "views at {} for log at {}",
        store.path().display(),
        log.location()
    )?;
    writeln!(
        std::io::stdout(),
        "{:<10} {:<22} {:>12} {:>12} {:>10} {:>12} {:>8} {:>9}  NOTE",
        "VIEW",
        "STREAM",
        "CHECKPOINT",
        "LOG LAST",
        "LAG",
        "STORED",
        "KEYS",
        "ENTRIES"
    )?;
    let mut live = 0u64;
    for name in ViewName::ALL {
        let streams = match name {
            ViewName::Thread => ThreadView::STREAMS,
            ViewName::Session => SessionView::STREAMS,
            ViewName::Volk => VolkView::STREAMS,
            ViewName::Decision => DecisionIndex::STREAMS,
            ViewName::Graph => GraphView::STREAMS,
            ViewName::Packet => PacketIndex::STREAMS,
            ViewName::Workflow => WorkflowView::STREAMS,
        };
        let stored = store.checkpoint(name)?;
        let usage = store.usage(name)?;
        live += usage.bytes;
        for stream in streams {
            let last = log.last_sequence(*stream).await?;
            let epoch = log.epoch(*stream).await?;
            let checkpoint = stored.as_ref().and_then(|s| s.checkpoint.last(*stream));
            let next = checkpoint.map_or(0, |c| c + 1);
            let lag = last.map_or(0, |l| (l + 1).saturating_sub(next));
            let note = match &stored {
                None => "not built",
                Some(s) if s.epochs.get(stream) != Some(&epoch) => "stale: log epoch changed",
                Some(_) => "",
            };
            let show = |v: Option<u64>| v.map_or_else(|| "-".to_string(), |v| v.to_string());
            writeln!(
                std::io::stdout(),
                "{:<10} {:<22} {:>12} {:>12} {:>10} {:>12} {:>8} {:>9}  {note}",
                name.as_str(),
                stream.as_str(),
                show(checkpoint),
                show(last),
                lag,
                human_bytes(usage.bytes),
                usage.keys,
                usage.entries
            )?;
        }
    }
    let disk = store.size_on_disk()?;
    writeln!(
        std::io::stdout(),
        "store on disk: {} for {} of views; the rest is B-tree pages and free pages that later commits reuse",
        human_bytes(disk),
        human_bytes(live)
    )?;
    Ok(())
}

/// `812.3KiB`, `1.4GiB`: one word, so the status table splits on whitespace.
fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes}B")
    } else {
        format!("{value:.1}{}", UNITS[unit])
    }
}

/// The view as stored, caught up with the log in memory; or folded up to `as_of`.
async fn current<V: View>(
    log: &dyn EventLog,
    store: &ViewStore,
    as_of: Option<u64>,
) -> anyhow::Result<V> {
    let quiet = &mut |_: Progress| {};
    if as_of.is_some() {
        return Ok(projection::rebuild(log, as_of, quiet).await?);
    }
    let epochs = projection::stream_epochs::<V>(log).await?;
    let mut view = match store.load::<V>()? {
        Some((view, stored)) if stored == epochs => view,
        _ => V::default(),
    };
    projection::catch_up(log, &mut view, None, quiet).await?;
    Ok(view)
}

/// A view opened to answer for one entry with a runner's memory: as stored and caught
/// up with the log, or as of `as_of` — folded into a scratch store beside the views when
/// the stored view has passed it (the directory returned holds that store; keep it
/// while the view is read).
async fn opened<V: View>(
    log: &dyn EventLog,
    store: &ViewStore,
    as_of: Option<u64>,
) -> anyhow::Result<(ViewHandle<V>, Option<tempfile::TempDir>)> {
    let hot = projection::DEFAULT_HOT_ENTRIES;
    let Some(as_of) = as_of else {
        return Ok((projection::open_view(log, store, hot).await?, None));
    };
    // Beside the views: a fold of a long history is as large as the stored view, too
    // large for a small /tmp. A read-only data directory falls back to the temp dir.
    let beside = store.path().parent().map(|dir| {
        tempfile::Builder::new()
            .prefix(".show-as-of-")
            .tempdir_in(dir)
    });
    let scratch = match beside {
        Some(Ok(dir)) => dir,
        _ => tempfile::tempdir().context("a scratch directory for the --as-of fold")?,
    };
    let mut reporter = Reporter::on_stderr(V::NAME);
    let view = projection::open_view_as_of(log, store, hot, as_of, scratch.path(), &mut |p| {
        reporter.report(p)
    })
    .await?;
    reporter.finish();
    Ok((view, Some(scratch)))
}

async fn show(args: ShowArgs, log_args: &LogArgs) -> anyhow::Result<()> {
    let (log, store) = args.store.open(log_args).await?;
    let log = log.as_ref();
    let missing =
        |what: &str, id: &str| anyhow::anyhow!("--id: no {what} `{id}` in the {} view", args.view);
    let value = match (args.view, args.id.as_deref()) {
        (ViewName::Thread, None) => {
            serde_json::to_value(current::<ThreadView>(log, &store, args.as_of).await?)?
        }
        (ViewName::Thread, Some(id)) => {
            // One thread: the view as a runner holds it, the rest read from the store.
            let (threads, _scratch) = opened::<ThreadView>(log, &store, args.as_of).await?;
            let (thread, packets) = threads
                .thread_state(id)?
                .ok_or_else(|| missing("thread", id))?;
            let status = threads.read().status_of(&thread);
            json!({"thread": thread, "effective_status": status, "packets": packets})
        }
        (ViewName::Session, None) => {
            serde_json::to_value(current::<SessionView>(log, &store, args.as_of).await?)?
        }
        (ViewName::Session, Some(id)) => {
            let view: SessionView = current(log, &store, args.as_of).await?;
            serde_json::to_value(view.session(id).ok_or_else(|| missing("session", id))?)?
        }
        (ViewName::Volk, None) => {
            serde_json::to_value(current::<VolkView>(log, &store, args.as_of).await?)?
        }
        (ViewName::Volk, Some(id)) => {
            let view: VolkView = current(log, &store, args.as_of).await?;
            let volk = view.volk(id).ok_or_else(|| missing("Volk", id))?;
            json!({"volk": volk, "last_activity": view.last_activity(id)})
        }
        (ViewName::Decision, None) => {
            // The whole index with every body: the store keeps only what searches filter
            // on (the bodies are in the log), so fold the log.
            let quiet = &mut |_: Progress| {};
            let index: DecisionIndex = projection::rebuild(log, args.as_of, quiet).await?;
            serde_json::to_value(index)?
        }
        (ViewName::Decision, Some(id)) => {
            let decision_id: uuid::Uuid = id
                .parse()
                .map_err(|e| anyhow::anyhow!("--id: `{id}` is not a decision id (a UUID): {e}"))?;
            let (index, _scratch) = opened::<DecisionIndex>(log, &store, args.as_of).await?;
            let found = projection::find_decision(&index, log, &decision_id).await?;
            serde_json::to_value(found.ok_or_else(|| missing("decision", id))?)?
        }
        (ViewName::Graph, None) => {
            serde_json::to_value(current::<GraphView>(log, &store, args.as_of).await?)?
        }
        (ViewName::Graph, Some(id)) => {
            let view: GraphView = current(log, &store, args.as_of).await?;
            let node = view.node(id).ok_or_else(|| missing("node", id))?;
            let query = orchestrata_projections::graph::RelQuery::default();
            let touching: Vec<_> = view
                .relationships(&query)
                .filter(|r| r.from == id || r.to == id)
                .collect();
            json!({"node": node, "relationships": touching})
        }
        (ViewName::Packet, None) => {
            serde_json::to_value(current::<PacketIndex>(log, &store, args.as_of).await?)?
        }
        (ViewName::Packet, Some(id)) => {
            let message_id: uuid::Uuid = id
                .parse()
                .map_err(|e| anyhow::anyhow!("--id: `{id}` is not a message id (a UUID): {e}"))?;
            let view: PacketIndex = current(log, &store, args.as_of).await?;
            let p = view
                .parties(&message_id)
                .ok_or_else(|| missing("packet", id))?;
            json!({"message_id": id, "sent_at_sequence": p.sequence, "from": p.from, "to": p.to, "subject": p.subject})
        }
        (ViewName::Workflow, None) => {
            serde_json::to_value(current::<WorkflowView>(log, &store, args.as_of).await?)?
        }
        (ViewName::Workflow, Some(id)) => {
            let view: WorkflowView = current(log, &store, args.as_of).await?;
            serde_json::to_value(view.run(id).ok_or_else(|| missing("workflow run", id))?)?
        }
    };
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, &value)?;
    writeln!(out)?;
    Ok(())
}

/// Runs every view live, printing `progress cxp.traffic <seq>` as the thread view
/// advances, until killed.
async fn run_live(args: RunArgs, log_args: &LogArgs) -> anyhow::Result<()> {
    let (log, store) = args.store.open(log_args).await?;
    let config = RunnerConfig {
        batch_events: args.batch_events.max(1),
        batch_interval: Duration::from_millis(args.batch_ms),
        ..RunnerConfig::default()
    };
    let views = Projections::start(log, store, config).await?;
    let threads = views.threads();
    let mut out = std::io::stdout();
    loop {
        let seq = threads.checkpoint().last(Stream::CxpTraffic);
        if let Some(seq) = seq {
            writeln!(out, "progress cxp.traffic {seq}")?;
            out.flush()?;
        }
        let next = seq.map_or(0, |s| s + 1);
        match threads
            .wait_for(Stream::CxpTraffic, next, Duration::from_millis(50))
            .await
        {
            Ok(()) | Err(projection::ProjectionError::WaitTimeout { .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
}
