//! Hidden `orchestrata __crash-append`: the child process of the crash test.
//!
//! Opens the sled log with `fsync = every_append` and appends kernel events from several
//! concurrent tasks, printing `ack <sequence> <event_id>` for each acknowledged append,
//! until killed. Acknowledged means durable, so every printed line must survive SIGKILL.
//! With `--across-streams` each append is a pair written as one unit
//! ([`EventLog::append_streams`](crate::log::EventLog::append_streams)): the kernel
//! event and a `thread_archived` on `cxp.traffic` whose thread id is the kernel event's
//! id — after the kill, no pair may be found half stored.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use chrono::Utc;
use clap::Args;
use orchestrata_schemas::events::cxp_traffic::ThreadArchived;
use orchestrata_schemas::events::kernel::KernelStopped;
use orchestrata_schemas::events::EventRecord;

use crate::config::{FsyncPolicy, LogConfig};
use crate::log;

/// Arguments of the crash-test child.
#[derive(Debug, Args)]
pub struct CrashArgs {
    /// Concurrent appenders (their appends share fsyncs).
    #[arg(long, default_value_t = 4)]
    writers: usize,
    /// Append pairs across two streams as one unit.
    #[arg(long)]
    across_streams: bool,
}

/// The sled directory is the global `--data-dir` (required here).
pub(super) async fn run(args: CrashArgs, log_args: super::LogArgs) -> anyhow::Result<()> {
    let data_dir: PathBuf = log_args
        .data_dir
        .ok_or_else(|| anyhow::anyhow!("__crash-append needs --data-dir DIR"))?;
    let mut config = LogConfig::sled(data_dir);
    config.fsync = FsyncPolicy::EveryAppend;
    let log = log::open(&config).await?;
    let out = Arc::new(std::sync::Mutex::new(std::io::stdout()));
    let mut writers = Vec::new();
    let across_streams = args.across_streams;
    for writer in 0..args.writers.max(1) {
        let log = log.clone();
        let out = out.clone();
        writers.push(tokio::spawn(async move {
            for n in 0u64.. {
                let record = EventRecord::new(
                    "crash-test",
                    format!("writer-{writer}"),
                    KernelStopped {
                        node: format!("writer-{writer}"),
                        reason: format!("append {n}"),
                        clean: false,
                    },
                    Utc::now(),
                );
                let sequence = if across_streams {
                    let partner = EventRecord::new(
                        "crash-test",
                        record.event_id.to_string(),
                        ThreadArchived {
                            thread_id: record.event_id.to_string(),
                            archived_by: format!("writer-{writer}"),
                            reason: None,
                        },
                        Utc::now(),
                    );
                    let sequences = log.append_streams(&[record.clone(), partner]).await?;
                    sequences.first().copied().unwrap_or_default()
                } else {
                    log.append(&record).await?
                };
                let mut out = out.lock().unwrap_or_else(|p| p.into_inner());
                writeln!(out, "ack {sequence} {}", record.event_id)?;
                out.flush()?;
            }
            anyhow::Ok(())
        }));
    }
    for writer in writers {
        writer.await??;
    }
    Ok(())
}
