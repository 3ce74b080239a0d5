//! `orchestrata log info`: a table of every stream's position.

use std::io::Write;

use anyhow::Context;
use clap::Args;
use orchestrata_schemas::events::Stream;

use super::LogArgs;
use crate::log;

/// Arguments of `orchestrata log info`.
#[derive(Debug, Args)]
pub struct InfoArgs {}

fn show(value: Option<u64>) -> String {
    value.map_or_else(|| "-".into(), |v| v.to_string())
}

pub(super) async fn run(_args: InfoArgs, log_args: LogArgs) -> anyhow::Result<()> {
    let config = log_args.config()?;
    let log = log::open(&config).await.context("opening the event log")?;
    writeln!(std::io::stdout(), "log at {}", log.location())?;
    writeln!(
        std::io::stdout(),
        "{:<22} {:<36} {:>10} {:>10} {:>10}",
        "STREAM",
        "EPOCH",
        "FIRST",
        "LAST",
        "COUNT"
    )?;
    for stream in Stream::ALL {
        let epoch = log.epoch(stream).await?;
        let bounds = log.bounds(stream).await?;
        writeln!(
            std::io::stdout(),
            "{:<22} {:<36} {:>10} {:>10} {:>10}",
            stream.as_str(),
            epoch,
            show(bounds.first),
            show(bounds.last),
            bounds.count()
        )?;
    }
    Ok(())
}
