//! `orchestrata audit decisions|verify|diff`: offline audit of governance decisions,
//! read straight from the log (sled directory or Kafka) with no server running, so an
//! auditor can run it on a copy of the data.

use std::io::{IsTerminal, Write};
use std::ops::ControlFlow;
use std::path::PathBuf;

use anyhow::Context;
use chrono::{DateTime, Utc};
use clap::{Args, Subcommand};

use super::LogArgs;
use crate::governance::audit::{self, AuditLog, RecordedDecision};
use crate::governance::Policy;
use crate::log;

/// Arguments of `orchestrata audit`.
#[derive(Debug, Args)]
pub struct AuditArgs {
    /// What to do.
    #[command(subcommand)]
    command: AuditCommand,
}

/// `orchestrata audit ...`.
#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Recorded decisions: a table on a terminal, JSON lines otherwise.
    Decisions(DecisionsArgs),
    /// Re-evaluate every decision under its recorded policy; non-zero exit if any differs.
    Verify,
    /// Re-evaluate recorded decisions under a candidate policy and report changes.
    Diff {
        /// Directory of the candidate policy's `.pl` files.
        #[arg(long, value_name = "DIR")]
        policy: PathBuf,
    },
}

/// Filters of `audit decisions`.
#[derive(Debug, Args)]
pub struct DecisionsArgs {
    /// Only decisions at or after this time (RFC 3339).
    #[arg(long, value_name = "T")]
    since: Option<DateTime<Utc>>,
    /// Only decisions at or before this time (RFC 3339).
    #[arg(long, value_name = "T")]
    until: Option<DateTime<Utc>>,
    /// Only this subject (client id or Volk alias).
    #[arg(long, value_name = "S")]
    subject: Option<String>,
    /// Only decisions caused by this principal (who acted: a token's name, an HMAC
    /// client id), as recorded on each decision's envelope.
    #[arg(long, value_name = "NAME")]
    principal: Option<String>,
    /// Only this result: allow, deny or escalate.
    #[arg(long, value_name = "R", value_parser = ["allow", "deny", "escalate"])]
    result: Option<String>,
    /// JSON lines even on a terminal.
    #[arg(long)]
    json: bool,
}

fn result_name(r: &orchestrata_schemas::events::types::DecisionResult) -> String {
    serde_json::to_value(r)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

pub(super) async fn run(args: AuditArgs, log_args: LogArgs) -> anyhow::Result<()> {
    let config = log_args.config()?;
    let log = log::open(&config).await.context("opening the event log")?;
    match args.command {
        AuditCommand::Decisions(filter) => {
            // A listing needs the decisions only, read a page at a time.
            let table = !filter.json && std::io::stdout().is_terminal();
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            if table {
                print_header(&mut out)?;
            }
            // A reader that closes the output (`| head`) ends the listing.
            let mut written = Ok(());
            audit::each_decision(log.as_ref(), |rd| {
                written = print_decision(&mut out, &rd, &filter, table);
                if written.is_ok() {
                    ControlFlow::Continue(())
                } else {
                    ControlFlow::Break(())
                }
            })
            .await
            .context("reading decisions")?;
            written
                .and_then(|()| out.flush())
                .context("writing to stdout")
        }
        AuditCommand::Verify => {
            let audit_log = read(log.as_ref()).await?;
            let report = audit::verify(&audit_log);
            let mut out = std::io::stdout().lock();
            for m in &report.mismatches {
                writeln!(
                    out,
                    "MISMATCH seq={} decision={} {}",
                    m.sequence, m.decision_id, m.reason
                )
                .context("writing to stdout")?;
            }
            writeln!(
                out,
                "verified {} decisions ({} fail-closed skipped): {} mismatch(es)",
                report.checked,
                report.skipped,
                report.mismatches.len()
            )
            .context("writing to stdout")?;
            if report.mismatches.is_empty() {
                Ok(())
            } else {
                anyhow::bail!(
                    "{} decision(s) differ on re-evaluation",
                    report.mismatches.len()
                )
            }
        }
        AuditCommand::Diff { policy } => {
            let audit_log = read(log.as_ref()).await?;
            let candidate = Policy::from_dir(&policy)?;
            let report = audit::diff(&audit_log, &candidate)?;
            print_diff(&report, candidate.hash()).context("writing to stdout")
        }
    }
}

/// `diff`'s report: each changed decision, counts by action and subject, a summary.
fn print_diff(report: &audit::DiffReport, hash: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    for c in &report.changes {
        writeln!(
            out,
            "CHANGED seq={} decision={} {} {} {}: {} -> {}",
            c.sequence, c.decision_id, c.subject, c.action, c.resource, c.recorded, c.candidate
        )?;
    }
    for (action, n) in &report.by_action {
        writeln!(out, "by action  {action}: {n}")?;
    }
    for (subject, n) in &report.by_subject {
        writeln!(out, "by subject {subject}: {n}")?;
    }
    writeln!(
        out,
        "{} of {} decisions would change under {hash}",
        report.changes.len(),
        report.compared
    )
}

/// The decisions, the policies they name and the fact streams (what verify and diff
/// replay), all in memory.
async fn read(log: &dyn crate::log::EventLog) -> anyhow::Result<AuditLog> {
    AuditLog::read(log).await.context("reading decisions")
}

/// The table's header line.
fn print_header(out: &mut impl Write) -> std::io::Result<()> {
    writeln!(
        out,
        "{:<8} {:<20} {:<16} {:<16} {:<18} {:<20} {:<9} {:<7} TRACE",
        "SEQ", "TIME", "PRINCIPAL", "SUBJECT", "ACTION", "RESOURCE", "RESULT", "DRYRUN"
    )
}

/// Writes `rd` if it passes the filters of `f`: a table row, or a JSON line.
fn print_decision(
    out: &mut impl Write,
    rd: &RecordedDecision,
    f: &DecisionsArgs,
    table: bool,
) -> std::io::Result<()> {
    let d = &rd.event;
    let result = result_name(&d.result);
    if f.since.is_some_and(|t| rd.timestamp < t)
        || f.until.is_some_and(|t| rd.timestamp > t)
        || f.subject.as_ref().is_some_and(|s| *s != d.subject)
        || f.principal
            .as_ref()
            .is_some_and(|p| Some(p) != rd.principal.as_ref())
        || f.result.as_ref().is_some_and(|r| *r != result)
    {
        return Ok(());
    }
    if table {
        writeln!(
            out,
            "{:<8} {:<20} {:<16} {:<16} {:<18} {:<20} {:<9} {:<7} {}",
            rd.sequence,
            rd.timestamp.format("%Y-%m-%dT%H:%M:%S"),
            rd.principal.as_deref().unwrap_or("-"),
            d.subject,
            d.action,
            d.resource,
            result,
            d.dry_run,
            d.rule_trace.join(" > ")
        )
    } else {
        let line = serde_json::json!({
            "sequence": rd.sequence,
            "timestamp": rd.timestamp,
            "decision_id": d.decision_id.to_string(),
            "principal": rd.principal,
            "subject_kind": d.subject_kind,
            "subject": d.subject,
            "action": d.action,
            "resource": d.resource,
            "result": result,
            "rule_trace": d.rule_trace,
            "articles_applied": d.articles_applied,
            "policy_hash": d.policy_hash,
            "latency_us": d.latency_us,
            "dry_run": d.dry_run,
            "reason": d.reason,
            "query": d.query,
        });
        writeln!(out, "{line}")
    }
}
