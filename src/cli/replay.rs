//! `orchestrata replay`: a stream's events as JSON lines, optionally following new ones.

use std::io::Write;

use anyhow::Context;
use clap::Args;
use futures::StreamExt;
use orchestrata_schemas::events::{Envelope, Stream};

use super::LogArgs;
use crate::log::{self, Pager};

/// Events read per page when not following.
const PAGE: usize = 1000;

/// Arguments of `orchestrata replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The stream, e.g. `kernel.events`.
    #[arg(long)]
    stream: Stream,
    /// First sequence to print.
    #[arg(long, default_value_t = 0)]
    from: u64,
    /// Last sequence to print (inclusive).
    #[arg(long)]
    to: Option<u64>,
    /// Keep printing new events as they are appended.
    #[arg(long)]
    follow: bool,
}

fn print(out: &mut impl Write, envelope: &Envelope) -> anyhow::Result<()> {
    serde_json::to_writer(&mut *out, envelope).context("writing JSON")?;
    out.write_all(b"\n").context("writing to stdout")?;
    Ok(())
}

pub(super) async fn run(args: ReplayArgs, log_args: LogArgs) -> anyhow::Result<()> {
    if let Some(to) = args.to {
        anyhow::ensure!(
            args.from <= to,
            "--from {} is after --to {to}: the range is empty",
            args.from
        );
    }
    let config = log_args.config()?;
    let log = log::open(&config).await.context("opening the event log")?;
    let stdout = std::io::stdout();
    if args.follow {
        let mut tail = log.tail(args.stream, args.from).await?;
        while let Some(envelope) = tail.next().await {
            let envelope = envelope?;
            if args.to.is_some_and(|to| envelope.sequence > to) {
                break;
            }
            let mut out = stdout.lock();
            print(&mut out, &envelope)?;
            out.flush().context("writing to stdout")?;
            if args.to == Some(envelope.sequence) {
                break;
            }
        }
        return Ok(());
    }
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut pages = Pager::new(&*log, args.stream, args.from, args.to).page_size(PAGE);
    while let Some(page) = pages.next_page().await? {
        for envelope in &page {
            print(&mut out, envelope)?;
        }
    }
    out.flush().context("writing to stdout")?;
    Ok(())
}
