//! Review subjects (US-011): the typed payloads of the QA review-fix loop.
//!
//! `review_code` (U:Cx, U:Ox or U:Vz -> U:Qa) asks for a review of a file; `fix_issues`
//! (U:Qa -> U:Vz) carries the findings; `review_complete` (U:Qa -> U:Ox) reports the end of
//! the loop. When a packet's subject is one of these, [`CxpPacket::validate`] checks the
//! route and parses the payload into its type; every error names the payload path.

use serde::{Deserialize, Serialize};

use super::alias::VolkAlias;
use super::error::CxpError;
use super::packet::CxpPacket;

/// Subject asking U:Qa to review code.
pub const SUBJECT_REVIEW_CODE: &str = "review_code";
/// Subject carrying review findings back for remediation.
pub const SUBJECT_FIX_ISSUES: &str = "fix_issues";
/// Subject telling the orchestrator the review loop ended.
pub const SUBJECT_REVIEW_COMPLETE: &str = "review_complete";
/// Metadata key holding the current review cycle (1-based) of a review-fix loop.
pub const METADATA_REVIEW_CYCLE: &str = "review_cycle";
/// Default maximum number of review-fix cycles before escalation to U:Ox.
pub const DEFAULT_MAX_REVIEW_CYCLES: u32 = 3;

/// Payload of `review_code`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewCode {
    /// File to review.
    pub file_path: String,
    /// Id of the review this request belongs to (absent on the first request).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_id: Option<String>,
}

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Must be fixed.
    Error,
    /// Should be fixed.
    Warning,
    /// For information.
    Info,
}

/// One finding of a review.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewIssue {
    /// Category, e.g. `style`, `complexity`.
    #[serde(rename = "type")]
    pub issue_type: String,
    /// Rule id of the checker, e.g. `E501`.
    pub rule: String,
    /// 1-based line number.
    pub line: u32,
    /// Human-readable finding.
    pub message: String,
    /// Severity.
    pub severity: Severity,
    /// Enclosing function, when the checker knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<String>,
}

/// Counts of a review's findings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewSummary {
    /// All findings; equals `errors + warnings + infos`.
    pub total_issues: u32,
    /// Findings of severity `error`.
    pub errors: u32,
    /// Findings of severity `warning`.
    pub warnings: u32,
    /// Findings of severity `info`.
    pub infos: u32,
}

/// Payload of `fix_issues`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FixIssues {
    /// Id of the review, stable across cycles.
    pub review_id: String,
    /// File the findings are about.
    pub file_path: String,
    /// The findings (the full list or the first page of it).
    pub issues: Vec<ReviewIssue>,
    /// Counts over all findings.
    pub summary: ReviewSummary,
    /// Whether every finding can be fixed mechanically.
    pub auto_fixable: bool,
}

/// How a review loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReviewOutcome {
    /// No issues remain.
    Passed,
    /// Issues remain; nothing more will be tried.
    Failed,
    /// Issues remain after the maximum cycles; handed to U:Ox.
    Escalated,
}

/// Payload of `review_complete`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewComplete {
    /// Id of the review.
    pub review_id: String,
    /// Final outcome.
    pub status: ReviewOutcome,
    /// Review-fix cycles used.
    pub cycles: u32,
    /// Counts of the findings left at the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<ReviewSummary>,
}

/// A review payload, typed by subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReviewPayload {
    /// `review_code`.
    ReviewCode(ReviewCode),
    /// `fix_issues`.
    FixIssues(FixIssues),
    /// `review_complete`.
    ReviewComplete(ReviewComplete),
}

/// Parse a typed payload. The happy path deserializes directly; only a failure runs again
/// through `serde_path_to_error` to name the path of the offending field.
fn parse<T: for<'de> Deserialize<'de>>(v: &serde_json::Value) -> Result<T, CxpError> {
    if let Ok(t) = T::deserialize(v) {
        return Ok(t);
    }
    serde_path_to_error::deserialize(v).map_err(|e| {
        let path = e.path().to_string();
        CxpError::InvalidPayloadField {
            path: if path == "." { String::new() } else { path },
            reason: e.into_inner().to_string(),
        }
    })
}

fn non_empty(path: &str, s: &str) -> Result<(), CxpError> {
    if s.trim().is_empty() {
        Err(CxpError::InvalidPayloadField {
            path: path.into(),
            reason: "must not be empty".into(),
        })
    } else {
        Ok(())
    }
}

fn route(packet: &CxpPacket, from: &[&str], to: &str) -> Result<(), CxpError> {
    let from_agent = packet.from_agent();
    let sender = from_agent.as_str();
    if !from.contains(&sender) {
        return Err(CxpError::invalid(
            "from_agent",
            format!(
                "subject `{}` must come from one of {from:?}, not {sender}",
                packet.subject()
            ),
        ));
    }
    if packet.to_agent().as_str() != to {
        return Err(CxpError::invalid(
            "to_agent",
            format!(
                "subject `{}` must go to {to}, not {}",
                packet.subject(),
                packet.to_agent()
            ),
        ));
    }
    Ok(())
}

impl ReviewSummary {
    fn check(&self, path: &str) -> Result<(), CxpError> {
        let sum = u64::from(self.errors) + u64::from(self.warnings) + u64::from(self.infos);
        if sum != u64::from(self.total_issues) {
            return Err(CxpError::InvalidPayloadField {
                path: format!("{path}.total_issues"),
                reason: format!(
                    "{} differs from errors + warnings + infos = {sum}",
                    self.total_issues
                ),
            });
        }
        Ok(())
    }
}

impl CxpPacket {
    /// The typed review payload when the subject is a review subject, `Ok(None)` for any
    /// other subject, or the first problem with route or payload.
    pub fn review_payload(&self) -> Result<Option<ReviewPayload>, CxpError> {
        let subject = self.subject();
        if ![
            SUBJECT_REVIEW_CODE,
            SUBJECT_FIX_ISSUES,
            SUBJECT_REVIEW_COMPLETE,
        ]
        .contains(&subject)
        {
            return Ok(None);
        }
        // Only review subjects look inside the payload: its text is parsed here, once.
        let value = &self.payload_json()?;
        let typed = match subject {
            SUBJECT_REVIEW_CODE => {
                route(self, &["U:Cx", "U:Ox", "U:Vz"], "U:Qa")?;
                let p: ReviewCode = parse(value)?;
                non_empty("file_path", &p.file_path)?;
                ReviewPayload::ReviewCode(p)
            }
            SUBJECT_FIX_ISSUES => {
                route(self, &["U:Qa"], "U:Vz")?;
                let p: FixIssues = parse(value)?;
                non_empty("review_id", &p.review_id)?;
                non_empty("file_path", &p.file_path)?;
                for (i, issue) in p.issues.iter().enumerate() {
                    if issue.line == 0 {
                        return Err(CxpError::InvalidPayloadField {
                            path: format!("issues[{i}].line"),
                            reason: "line numbers start at 1".into(),
                        });
                    }
                    non_empty(&format!("issues[{i}].rule"), &issue.rule)?;
                    non_empty(&format!("issues[{i}].message"), &issue.message)?;
                }
                p.summary.check("summary")?;
                ReviewPayload::FixIssues(p)
            }
            _ => {
                route(self, &["U:Qa"], "U:Ox")?;
                let p: ReviewComplete = parse(value)?;
                non_empty("review_id", &p.review_id)?;
                if let Some(s) = &p.summary {
                    s.check("summary")?;
                }
                ReviewPayload::ReviewComplete(p)
            }
        };
        Ok(Some(typed))
    }

    /// The current review cycle from metadata (`review_cycle`), 0 when absent.
    pub fn review_cycle(&self) -> u32 {
        self.metadata()
            .get(METADATA_REVIEW_CYCLE)
            .and_then(serde_json::Value::as_u64)
            .and_then(|c| u32::try_from(c).ok())
            .unwrap_or(0)
    }
}

/// Run the review checks as part of [`CxpPacket::validate`].
pub(crate) fn validate_review_payload(packet: &CxpPacket) -> Result<(), CxpError> {
    packet.review_payload().map(|_| ())
}

/// Whether `alias` may receive an escalated review (the orchestrator).
pub fn is_review_escalation_target(alias: VolkAlias) -> bool {
    alias.as_str() == "U:Ox"
}
