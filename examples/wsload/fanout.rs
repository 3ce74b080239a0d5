//! The fan-out shape both servers are measured with: one publisher offering `rate`
//! packets per second for `secs` seconds, each acknowledged by the server (a `cxp.send`
//! result, a JetStream PubAck), and `subs` subscribers that must each receive every
//! acknowledged packet.
//!
//! The protocol modules ([`crate::orch`], [`crate::nats`]) write the publisher and the
//! subscribers; this module paces the publisher, waits for the stragglers and turns what
//! everyone saw into one report, the same keys for both servers:
//!
//! - `offered_per_s`: packets the publisher wrote per second of its window (below `rate`
//!   when the server's acknowledgements hold the publisher's window full);
//! - `accepted_per_s`: packets acknowledged within the window, per second;
//! - `deliveries_per_s`: first receipts at all subscribers, per second from the first send
//!   to the last receipt (so a server that falls behind is not flattered by its backlog);
//! - `missing`: acknowledged packets some subscriber never received (each pair counted);
//! - `delivery_p50_ms`/`delivery_p99_ms`/`delivery_max_ms`: send instant to first receipt.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::Args;
use tokio::sync::watch;

use crate::stats::{ms, percentile, Clock, Report, SeqSet, Tally};

/// The fan-out load, as given on the command line.
#[derive(Debug, Clone, Args)]
pub struct FanoutArgs {
    /// Subscribers, each on its own connection.
    #[arg(long, default_value_t = 100)]
    pub subs: u64,
    /// Packets offered per second by the one publisher.
    #[arg(long, default_value_t = 10_000)]
    pub rate: u64,
    /// Seconds of publishing.
    #[arg(long, default_value_t = 5)]
    pub secs: u64,
    /// Unacknowledged packets the publisher may have in flight.
    #[arg(long, default_value_t = 4096)]
    pub window: usize,
    /// Longest wait for stragglers after publishing ends (seconds); the wait also ends
    /// once nothing has arrived for 5 s.
    #[arg(long, default_value_t = 60)]
    pub drain_secs: u64,
}

/// Counters the publisher, its acknowledgement reader and the subscribers share.
#[derive(Debug, Default)]
pub struct Progress {
    /// Packets written by the publisher.
    pub sent: AtomicU64,
    /// Packets acknowledged without error.
    pub acked: AtomicU64,
    /// Packets answered with an error.
    pub errors: AtomicU64,
    /// First receipts at all subscribers together.
    pub delivered: AtomicU64,
    /// The sequences acknowledged without error.
    pub accepted: Mutex<SeqSet>,
    /// The first error answer, for the report.
    pub first_error: Mutex<Option<String>>,
}

impl Progress {
    /// Records the server's answer for packet `seq`: `Ok` or the error text.
    pub fn answer(&self, seq: u64, outcome: Result<(), String>) {
        match outcome {
            Ok(()) => {
                if let Ok(mut set) = self.accepted.lock() {
                    set.insert(seq);
                }
                self.acked.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                if let Ok(mut first) = self.first_error.lock() {
                    first.get_or_insert(e);
                }
                self.errors.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// Paces the publisher: how many packets are due at a given instant.
#[derive(Debug)]
pub struct Pacer {
    start_ns: u64,
    rate: u64,
    end_ns: u64,
}

impl Pacer {
    /// A pacer for `args`, starting now on `clock`.
    pub fn new(clock: &Clock, args: &FanoutArgs) -> Pacer {
        let start_ns = clock.now_ns();
        Pacer {
            start_ns,
            rate: args.rate.max(1),
            end_ns: start_ns + args.secs * 1_000_000_000,
        }
    }

    /// Packets due by `now_ns` (from the start), or `None` once the window is over.
    pub fn due(&self, now_ns: u64) -> Option<u64> {
        (now_ns < self.end_ns)
            .then(|| (now_ns - self.start_ns) as u128 * self.rate as u128 / 1_000_000_000)
            .map(|n| n as u64 + 1)
    }

    /// The window's start.
    pub fn start_ns(&self) -> u64 {
        self.start_ns
    }
}

/// Waits until every acknowledged packet reached every subscriber, or nothing arrived
/// for 5 s, or `args.drain_secs` passed.
pub async fn drain(progress: &Progress, args: &FanoutArgs) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(args.drain_secs);
    let mut last = (u64::MAX, tokio::time::Instant::now());
    loop {
        let acked = progress.acked.load(Ordering::Relaxed);
        let answered = acked + progress.errors.load(Ordering::Relaxed);
        let delivered = progress.delivered.load(Ordering::Relaxed);
        let now = tokio::time::Instant::now();
        if answered >= progress.sent.load(Ordering::Relaxed) && delivered >= acked * args.subs {
            return;
        }
        if delivered + answered != last.0 {
            last = (delivered + answered, now);
        }
        if now >= deadline || now - last.1 > Duration::from_secs(5) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Stops the subscribers (they watch `stop`) and collects their tallies.
pub async fn collect(
    stop: watch::Sender<bool>,
    subs: Vec<tokio::task::JoinHandle<anyhow::Result<Tally>>>,
) -> anyhow::Result<Vec<Tally>> {
    let _ = stop.send(true);
    let mut tallies = Vec::with_capacity(subs.len());
    for s in subs {
        tallies.push(s.await??);
    }
    Ok(tallies)
}

/// The report of one fan-out run.
pub fn summarize(
    server: &str,
    args: &FanoutArgs,
    pacer: &Pacer,
    window_secs: f64,
    accepted_in_window: u64,
    progress: &Progress,
    tallies: &[Tally],
) -> Report {
    let sent = progress.sent.load(Ordering::Relaxed);
    let acked = progress.acked.load(Ordering::Relaxed);
    let accepted = progress
        .accepted
        .lock()
        .map(|s| s.clone())
        .unwrap_or_default();
    let missing: u64 = tallies.iter().map(|t| accepted.missing_from(&t.seen)).sum();
    let deliveries: u64 = tallies.iter().map(|t| t.latency_us.len() as u64).sum();
    let frames: u64 = tallies.iter().map(|t| t.frames).sum();
    let last_ns = tallies.iter().map(|t| t.last_ns).max().unwrap_or(0);
    let span_s = (last_ns.saturating_sub(pacer.start_ns()) as f64 / 1e9).max(window_secs);
    let mut latency: Vec<u32> = tallies
        .iter()
        .flat_map(|t| t.latency_us.iter().copied())
        .collect();
    latency.sort_unstable();
    let mut r = Report::default();
    r.put("server", server)
        .put("subs", args.subs)
        .put("rate", args.rate)
        .put("secs", args.secs)
        .put("sent", sent)
        .put("offered_per_s", format!("{:.0}", sent as f64 / window_secs))
        .put("accepted", acked)
        .put(
            "accepted_per_s",
            format!("{:.0}", accepted_in_window as f64 / window_secs),
        )
        .put("errors", progress.errors.load(Ordering::Relaxed))
        .put("deliveries", deliveries)
        .put("expected", acked * args.subs)
        .put("missing", missing)
        .put("gaps", tallies.iter().map(|t| t.gaps).sum::<u64>())
        .put(
            "deliveries_per_s",
            format!("{:.0}", deliveries as f64 / span_s),
        )
        .put("frames", frames)
        .put("frames_per_s", format!("{:.0}", frames as f64 / span_s))
        .put("delivery_p50_ms", ms(percentile(&latency, 0.50) as u64))
        .put("delivery_p99_ms", ms(percentile(&latency, 0.99) as u64))
        .put(
            "delivery_max_ms",
            ms(latency.last().copied().unwrap_or(0) as u64),
        );
    if let Some(e) = progress.first_error.lock().ok().and_then(|e| e.clone()) {
        r.put("first_error", e.replace('\n', " "));
    }
    r
}

/// Shared handles of one run.
pub fn shared() -> (Arc<Progress>, watch::Sender<bool>, watch::Receiver<bool>) {
    let (tx, rx) = watch::channel(false);
    (Arc::new(Progress::default()), tx, rx)
}
