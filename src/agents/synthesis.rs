//! Synthesis that compares (005 US-009, FR12; issue 16 item 4): a senior scores every
//! successful junior output with the configured review checkers, publishes the scores,
//! and answers with the best output or a merge in score order.
//!
//! **Scoring.** Each successful output is written to a fresh temporary directory as a
//! file named `answer` (no extension) and checked by every command of
//! `agents.review.checkers` (the same checkers, the same JSON issue list and the same
//! `REVIEW_TIMEOUT_SECONDS` as the review-fix loop: [`super::review::run_checker`]).
//! The score is `100 - (10 x errors + 3 x warnings + 1 x infos)`, floored at 0.
//!
//! - A checker that cannot start, crashes, times out or prints something other than an
//!   issue list makes the output **unscored** (`score: null`) with the reason in
//!   `checker_errors`; the issues of the other checkers are still reported. An output
//!   that could not be checked is not shown to be clean, so every scored output ranks
//!   above every unscored one; among unscored outputs, junior order decides.
//! - With no checkers configured every successful output scores 100: they tie, and the
//!   earliest junior (the order of the request) wins.
//! - A failed junior gets no score at all (it has no output).
//!
//! **Scores are events.** For each scored output the senior sends its parent a CXP
//! packet [`SCORE_SUBJECT`] with payload `{task_id, junior, score, issues,
//! checker_errors?}` through the kernel, before the `synthesis` packet, so they are on
//! `cxp.traffic` like every other packet.
//!
//! **Strategies** ([`Strategy`]): `best` (the default) answers with the highest-scoring
//! output (ties: the earliest junior); `merge` joins every successful output in score
//! order (ties: junior order), separated by a line `---`.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use futures::future::join_all;
use orchestrata_schemas::cxp::review::{ReviewIssue, Severity};
use orchestrata_schemas::cxp::{CxpPacket, VolkAlias};
use serde_json::{json, Value};
use uuid::Uuid;

use super::error::AgentError;
use super::review::{run_checker, ReviewConfig};

/// Subject of a packet carrying one junior output's score (senior -> its parent).
pub const SCORE_SUBJECT: &str = "junior_score";
/// The score of an output no checker found anything in.
pub const MAX_SCORE: u32 = 100;
/// Points an issue costs, by severity: error, warning, info.
pub const WEIGHTS: (u32, u32, u32) = (10, 3, 1);

/// How the senior turns the scored outputs into its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Strategy {
    /// The highest-scoring output; ties go to the earliest junior.
    #[default]
    Best,
    /// Every successful output, best first, separated by a line `---`.
    Merge,
}

impl Strategy {
    /// The name used in requests and packets: `best` or `merge`.
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::Best => "best",
            Strategy::Merge => "merge",
        }
    }
}

impl FromStr for Strategy {
    type Err = AgentError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "best" => Ok(Strategy::Best),
            "merge" => Ok(Strategy::Merge),
            other => Err(AgentError::invalid(
                "synthesis",
                format!("unknown synthesis strategy `{other}`: use `best` or `merge`"),
            )),
        }
    }
}

/// One successful junior output's score.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Score {
    /// The junior's alias.
    pub junior: String,
    /// `0..=100`; `None`: unscored (a checker failed, see `checker_errors`).
    pub score: Option<u32>,
    /// What the checkers that ran found, in checker order.
    pub issues: Vec<ReviewIssue>,
    /// Why checkers could not judge the output (empty when all ran).
    pub checker_errors: Vec<String>,
}

impl Score {
    /// The payload of its [`SCORE_SUBJECT`] packet.
    pub fn payload(&self, task_id: &str) -> Value {
        let mut body = json!({
            "task_id": task_id, "junior": self.junior, "score": self.score,
            "issues": self.issues,
        });
        if !self.checker_errors.is_empty() {
            body["checker_errors"] = json!(self.checker_errors);
        }
        body
    }
}

/// Scores outputs with review checkers. The default has none (every output scores
/// [`MAX_SCORE`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scorer {
    checkers: Vec<Vec<String>>,
    timeout: Duration,
}

impl Scorer {
    /// With `checkers` (program and leading arguments each), each limited to `timeout`.
    pub fn new(checkers: Vec<Vec<String>>, timeout: Duration) -> Self {
        Scorer { checkers, timeout }
    }

    /// With the checkers and time limit of `agents.review`.
    pub fn from_review(review: &ReviewConfig) -> Self {
        Scorer::new(
            review.checkers.clone(),
            Duration::from_secs(review.timeout_seconds),
        )
    }

    /// Scores `output` of `junior` (see the module docs); never fails: what goes wrong
    /// is in `checker_errors`.
    pub async fn score(&self, junior: &str, output: &str) -> Score {
        let mut score = Score {
            junior: junior.to_owned(),
            score: Some(MAX_SCORE),
            issues: Vec::new(),
            checker_errors: Vec::new(),
        };
        if self.checkers.is_empty() {
            return score;
        }
        let file = match AnswerFile::write(output) {
            Ok(f) => f,
            Err(e) => {
                score.score = None;
                score
                    .checker_errors
                    .push(format!("cannot write the output for the checkers: {e}"));
                return score;
            }
        };
        for argv in &self.checkers {
            match run_checker(argv, self.timeout, &file.path()).await {
                Ok(found) => score.issues.extend(found),
                Err(e) => score.checker_errors.push(e.to_string()),
            }
        }
        score.score = score
            .checker_errors
            .is_empty()
            .then(|| points(&score.issues));
        score
    }

    /// Scores every `(junior, output)` concurrently; the scores in the same order.
    pub async fn score_all(&self, outputs: &[(&str, &str)]) -> Vec<Score> {
        join_all(outputs.iter().map(|(j, o)| self.score(j, o))).await
    }
}

/// `100 - weighted issues`, floored at 0.
pub fn points(issues: &[ReviewIssue]) -> u32 {
    let cost: u32 = issues
        .iter()
        .map(|i| match i.severity {
            Severity::Error => WEIGHTS.0,
            Severity::Warning => WEIGHTS.1,
            Severity::Info => WEIGHTS.2,
        })
        .fold(0u32, u32::saturating_add);
    MAX_SCORE.saturating_sub(cost)
}

/// Indices of `scores`, best first: scored outputs by score (highest first), then the
/// unscored; ties keep their order (the earliest junior first).
pub fn rank(scores: &[Score]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by_key(|&i| match scores[i].score {
        Some(s) => (0, MAX_SCORE.saturating_sub(s)),
        None => (1, 0),
    });
    order
}

/// The senior's answer from the scored outputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Synthesized {
    /// The answer.
    pub output: String,
    /// The junior whose output is the answer (`best` only).
    pub chosen: Option<String>,
    /// The juniors in score order (best first).
    pub order: Vec<String>,
}

/// Applies `strategy` to `outputs` (`(junior, output)`, junior order, not empty) and
/// their `scores` (same order).
pub fn synthesize(strategy: Strategy, outputs: &[(&str, &str)], scores: &[Score]) -> Synthesized {
    let ranked: Vec<(&str, &str)> = rank(scores)
        .into_iter()
        .filter_map(|i| outputs.get(i).copied())
        .collect();
    let order = ranked.iter().map(|(j, _)| (*j).to_owned()).collect();
    match strategy {
        Strategy::Best => {
            let best = ranked.first().copied();
            Synthesized {
                output: best.map(|(_, o)| o.to_owned()).unwrap_or_default(),
                chosen: best.map(|(j, _)| j.to_owned()),
                order,
            }
        }
        Strategy::Merge => {
            let texts: Vec<&str> = ranked.iter().map(|(_, o)| *o).collect();
            Synthesized {
                output: super::profiles::concatenate(&texts),
                chosen: None,
                order,
            }
        }
    }
}

/// The `scores` field of the synthesis payload: junior alias -> score (`null`:
/// unscored).
pub fn score_map(scores: &[Score]) -> Value {
    Value::Object(
        scores
            .iter()
            .map(|s| (s.junior.clone(), json!(s.score)))
            .collect(),
    )
}

/// A [`SCORE_SUBJECT`] packet from `senior` to `parent`.
pub fn score_packet(
    senior: &str,
    parent: &str,
    task_id: &str,
    score: &Score,
) -> Result<CxpPacket, AgentError> {
    let alias = |a: &str, f: &'static str| {
        VolkAlias::parse_field(a, f).map_err(|e| AgentError::invalid(f, e.to_string()))
    };
    CxpPacket::new(
        alias(senior, "senior")?,
        alias(parent, "parent")?,
        SCORE_SUBJECT,
        score.payload(task_id),
    )
    .map_err(|e| AgentError::invalid("junior_score", e.to_string()))
}

/// An output written for the checkers; its directory goes away on drop.
struct AnswerFile {
    dir: PathBuf,
}

impl AnswerFile {
    fn write(output: &str) -> std::io::Result<Self> {
        let dir = std::env::temp_dir().join(format!("orchestrata-score-{}", Uuid::new_v4()));
        std::fs::create_dir(&dir)?;
        let file = AnswerFile { dir };
        std::fs::write(file.path(), output)?;
        Ok(file)
    }

    fn path(&self) -> PathBuf {
        self.dir.join("answer")
    }
}

impl Drop for AnswerFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn issue(severity: Severity) -> ReviewIssue {
        ReviewIssue {
            issue_type: "style".into(),
            rule: "R1".into(),
            line: 1,
            message: "m".into(),
            severity,
            function: None,
        }
    }

    fn scored(junior: &str, score: Option<u32>) -> Score {
        Score {
            junior: junior.into(),
            score,
            issues: Vec::new(),
            checker_errors: Vec::new(),
        }
    }

    #[test]
    fn points_weigh_by_severity_and_floor_at_zero() {
        assert_eq!(points(&[]), 100);
        let mixed = [
            issue(Severity::Error),
            issue(Severity::Warning),
            issue(Severity::Info),
        ];
        assert_eq!(points(&mixed), 86);
        assert_eq!(points(&vec![issue(Severity::Error); 11]), 0);
    }

    #[test]
    fn rank_puts_unscored_last_and_keeps_junior_order_on_ties() {
        let scores = [
            scored("U:Aa", None),
            scored("U:Ab", Some(90)),
            scored("U:Ac", Some(100)),
            scored("U:Ad", Some(90)),
        ];
        assert_eq!(rank(&scores), vec![2, 1, 3, 0]);
    }

    #[test]
    fn strategies_parse_and_refuse_the_rest() {
        assert_eq!("best".parse::<Strategy>().ok(), Some(Strategy::Best));
        assert_eq!("merge".parse::<Strategy>().ok(), Some(Strategy::Merge));
        let err = "vote".parse::<Strategy>().err().map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("`best` or `merge`")));
    }
}
