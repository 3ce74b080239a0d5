//! The review-fix loop (004 US-011, 005 US-011), as real CXP traffic.
//!
//! ```text
//! requester --review_code(cycle n)--> U:Qa  runs the checkers on the file
//!   no issues            : U:Qa --review_complete(passed, n)--> U:Ox
//!   issues, n < max      : U:Qa --fix_issues(n)--> U:Vz, U:Vz fixes (a junior),
//!                          U:Vz --review_code(n+1)--> U:Qa ...
//!   issues, n == max     : U:Qa --review_complete(escalated|failed, n)--> U:Ox and,
//!                          with ESCALATE_ON_MAX_CYCLES, U:Qa escalates to U:Ox
//! ```
//!
//! The cycle travels in packet metadata (`review_cycle`). A checker is any command
//! that takes the file path as its last argument and prints a JSON array of issues
//! (`[{"type","rule","line","message","severity"}]`, a linter's JSON output); each
//! runs with `REVIEW_TIMEOUT_SECONDS`. Every packet is a kernel command, so the whole
//! loop is on `cxp.traffic` and governed like any other traffic.

use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;
use orchestrata_schemas::cxp::review::{
    FixIssues, ReviewComplete, ReviewIssue, ReviewOutcome, ReviewSummary, Severity,
    METADATA_REVIEW_CYCLE, SUBJECT_FIX_ISSUES, SUBJECT_REVIEW_CODE, SUBJECT_REVIEW_COMPLETE,
};
use orchestrata_schemas::cxp::{CxpPacket, VolkAlias};
use orchestrata_schemas::events::{Command, CommandKind};
use serde::Deserialize;
use uuid::Uuid;

use super::driver::{run_task, Task};
use super::drivers::cli::{CliConfig, CliDriver};
use super::error::AgentError;
use super::service::Agents;
use crate::kernel::convert;

/// The loop's settings (`MAX_REVIEW_CYCLES`, `REVIEW_TIMEOUT_SECONDS`,
/// `ESCALATE_ON_MAX_CYCLES`, `AUTO_FIX_ON_SINGLE_ISSUE`, and the checkers).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewConfig {
    /// Cycles before giving up (`MAX_REVIEW_CYCLES`, default 3).
    #[serde(default = "default_cycles", rename = "MAX_REVIEW_CYCLES")]
    pub max_cycles: u32,
    /// Per-checker time limit (`REVIEW_TIMEOUT_SECONDS`, default 300).
    #[serde(default = "default_timeout", rename = "REVIEW_TIMEOUT_SECONDS")]
    pub timeout_seconds: u64,
    /// Escalate to U:Ox at the cycle limit (`ESCALATE_ON_MAX_CYCLES`, default true).
    #[serde(default = "yes", rename = "ESCALATE_ON_MAX_CYCLES")]
    pub escalate_on_max_cycles: bool,
    /// Mark a single finding auto-fixable (`AUTO_FIX_ON_SINGLE_ISSUE`, default true).
    #[serde(default = "yes", rename = "AUTO_FIX_ON_SINGLE_ISSUE")]
    pub auto_fix_on_single_issue: bool,
    /// Checker commands: program and leading arguments; the file path is appended.
    #[serde(default)]
    pub checkers: Vec<Vec<String>>,
}

fn default_cycles() -> u32 {
    orchestrata_schemas::cxp::review::DEFAULT_MAX_REVIEW_CYCLES
}

fn default_timeout() -> u64 {
    300
}

fn yes() -> bool {
    true
}

impl ReviewConfig {
    /// Defaults with these checkers.
    pub fn with_checkers(checkers: Vec<Vec<String>>) -> Self {
        ReviewConfig {
            max_cycles: default_cycles(),
            timeout_seconds: default_timeout(),
            escalate_on_max_cycles: true,
            auto_fix_on_single_issue: true,
            checkers,
        }
    }

    /// Parses the YAML form (keys as in the spec, `checkers` a list of argv lists).
    pub fn from_yaml(text: &str) -> Result<Self, AgentError> {
        let c: ReviewConfig = serde_yaml_ng::from_str(text).map_err(|e| AgentError::Config {
            field: "review",
            reason: e.to_string(),
        })?;
        if c.max_cycles == 0 {
            return Err(AgentError::Config {
                field: "MAX_REVIEW_CYCLES",
                reason: "must be at least 1".into(),
            });
        }
        if c.checkers.iter().any(Vec::is_empty) {
            return Err(AgentError::Config {
                field: "checkers",
                reason: "a checker needs a program".into(),
            });
        }
        Ok(c)
    }
}

/// Whoever applies `fix_issues` on U:Vz's side (a junior in practice).
#[async_trait]
pub trait Fixer: Send {
    /// Changes the file so that (hopefully) the issues go away.
    async fn fix(&mut self, fix: &FixIssues) -> Result<(), AgentError>;
}

/// How the loop ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewReport {
    /// The final `review_complete` payload.
    pub complete: ReviewComplete,
    /// The issues left (empty when passed).
    pub remaining: Vec<ReviewIssue>,
    /// The thread carrying the loop.
    pub thread_id: String,
}

/// Runs the loop on `file` for `requester` (U:Cx, U:Ox or U:Vz), fixing with `fixer`.
pub async fn run_review(
    agents: &Agents,
    config: &ReviewConfig,
    requester: &str,
    file: &Path,
    fixer: &mut dyn Fixer,
) -> Result<ReviewReport, AgentError> {
    let review_id = Uuid::new_v4().to_string();
    let file_path = file.display().to_string();
    let mut thread_id = String::new();
    let mut cycle = 1;
    loop {
        let body = serde_json::json!({ "file_path": file_path, "review_id": review_id });
        let sent = send(
            agents,
            requester,
            "U:Qa",
            SUBJECT_REVIEW_CODE,
            body,
            cycle,
            &thread_id,
        )
        .await?;
        thread_id = sent;
        take(agents, "U:Qa", SUBJECT_REVIEW_CODE).await?;
        let issues = check(config, file).await?;
        let summary = summarize(&issues);
        if issues.is_empty() || cycle >= config.max_cycles {
            let status = match (issues.is_empty(), config.escalate_on_max_cycles) {
                (true, _) => ReviewOutcome::Passed,
                (false, true) => ReviewOutcome::Escalated,
                (false, false) => ReviewOutcome::Failed,
            };
            let complete = ReviewComplete {
                review_id: review_id.clone(),
                status,
                cycles: cycle,
                summary: Some(summary),
            };
            let body = serde_json::to_value(&complete)
                .map_err(|e| AgentError::invalid("review_complete", e.to_string()))?;
            send(
                agents,
                "U:Qa",
                "U:Ox",
                SUBJECT_REVIEW_COMPLETE,
                body,
                cycle,
                &thread_id,
            )
            .await?;
            if status == ReviewOutcome::Escalated {
                let context = serde_json::json!({
                    "review_id": review_id, "file_path": file_path, "cycles": cycle,
                    "issues": issues,
                });
                agents
                    .escalate(
                        "U:Qa",
                        "max review cycles reached with issues left",
                        Some(&thread_id),
                        context,
                        &[],
                    )
                    .await?;
            }
            return Ok(ReviewReport {
                complete,
                remaining: issues,
                thread_id,
            });
        }
        let fix = FixIssues {
            review_id: review_id.clone(),
            file_path: file_path.clone(),
            auto_fixable: config.auto_fix_on_single_issue && issues.len() == 1,
            issues,
            summary,
        };
        let body = serde_json::to_value(&fix)
            .map_err(|e| AgentError::invalid("fix_issues", e.to_string()))?;
        send(
            agents,
            "U:Qa",
            "U:Vz",
            SUBJECT_FIX_ISSUES,
            body,
            cycle,
            &thread_id,
        )
        .await?;
        take(agents, "U:Vz", SUBJECT_FIX_ISSUES).await?;
        fixer.fix(&fix).await?;
        cycle += 1;
    }
}

fn summarize(issues: &[ReviewIssue]) -> ReviewSummary {
    let count = |s: Severity| issues.iter().filter(|i| i.severity == s).count() as u32;
    ReviewSummary {
        total_issues: issues.len() as u32,
        errors: count(Severity::Error),
        warnings: count(Severity::Warning),
        infos: count(Severity::Info),
    }
}

/// Runs every checker on `file`; their issues, in checker order. The first checker
/// that cannot run or answers something else than an issue list fails the whole check.
pub async fn check(config: &ReviewConfig, file: &Path) -> Result<Vec<ReviewIssue>, AgentError> {
    let timeout = Duration::from_secs(config.timeout_seconds);
    let mut all = Vec::new();
    for argv in &config.checkers {
        all.extend(run_checker(argv, timeout, file).await?);
    }
    Ok(all)
}

/// Runs one checker (`argv` = program and leading arguments; `file` is appended) on its
/// CLI driver within `timeout` and parses its standard output as a JSON issue list. A
/// checker that cannot start, crashes, times out or prints anything else is an error
/// (field `checkers`) naming the program and why.
pub async fn run_checker(
    argv: &[String],
    timeout: Duration,
    file: &Path,
) -> Result<Vec<ReviewIssue>, AgentError> {
    let Some((program, args)) = argv.split_first() else {
        return Err(AgentError::Config {
            field: "checkers",
            reason: "a checker needs a program".into(),
        });
    };
    let mut cli = CliConfig::new(PathBuf::from(program)).args(args.iter().cloned());
    cli.args.push(file.display().to_string());
    let mut driver = CliDriver::new(cli);
    let task = Task {
        id: "review".into(),
        prompt: String::new(),
        timeout,
    };
    let out = run_task(&mut driver, &task)
        .await
        .map_err(|e| AgentError::invalid("checkers", format!("{program}: {e}")))?;
    serde_json::from_str(out.trim()).map_err(|e| {
        AgentError::invalid(
            "checkers",
            format!("{program}: output is not a JSON issue list: {e}"),
        )
    })
}

/// Sends a packet as a kernel command; returns its thread.
async fn send(
    agents: &Agents,
    from: &str,
    to: &str,
    subject: &str,
    body: serde_json::Value,
    cycle: u32,
    thread: &str,
) -> Result<String, AgentError> {
    let alias = |a: &str, f: &'static str| {
        VolkAlias::parse_field(a, f).map_err(|e| AgentError::invalid(f, e.to_string()))
    };
    let mut packet = CxpPacket::new(alias(from, "from")?, alias(to, "to")?, subject, body)
        .map_err(|e| AgentError::invalid("packet", e.to_string()))?
        .with_metadata(METADATA_REVIEW_CYCLE, serde_json::Value::from(cycle));
    if !thread.is_empty() {
        packet = packet
            .with_thread_id(thread)
            .map_err(|e| AgentError::invalid("thread_id", e.to_string()))?;
    }
    packet
        .validate()
        .map_err(|e| AgentError::invalid("packet", e.to_string()))?;
    let thread_id = packet.thread_id().to_owned();
    let command = Command {
        id: Uuid::new_v4(),
        principal: None,
        issuer: from.to_owned(),
        action: CommandKind::SendPacket {
            packet: convert::to_record(&packet, None),
        },
    };
    agents.kernel().execute(command).await?;
    Ok(thread_id)
}

/// `alias` reads its inbox and acknowledges the packets of `subject` (the Postman
/// delivers them).
async fn take(agents: &Agents, alias: &str, subject: &str) -> Result<(), AgentError> {
    let inbox = agents.kernel().inbox(alias, 100).await?;
    for p in inbox.packets.iter().filter(|p| p.subject() == subject) {
        let command = Command {
            id: Uuid::new_v4(),
            principal: None,
            issuer: alias.to_owned(),
            action: CommandKind::Acknowledge {
                message_id: p.message_id(),
                by: alias.to_owned(),
            },
        };
        agents.kernel().execute(command).await?;
    }
    Ok(())
}
