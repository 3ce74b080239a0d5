//! Escalation paths: who decides next when a Volk cannot.
//!
//! A path is resolved one hop at a time, deterministically, from the tree and the
//! declared configuration only (no I/O, no clock), so the same log and the same
//! configuration always name the same target:
//!
//! 1. the first *live* Volk in the escalating Volk's declared path (config), if any;
//! 2. otherwise its live parent;
//! 3. otherwise (a root, or an orphan) [`HUMAN`]: the human queue.
//!
//! A declared hop must be an ancestor: escalation goes *up* the tree (005 Article IX),
//! and the kernel refuses anything else. The governance policy (`cxp.escalate`) has the
//! final word on each hop.

use std::collections::HashMap;

use serde::Deserialize;

use super::error::AgentError;
use super::limits::HUMAN;
use orchestrata_projections::agents::AgentTree;

/// Declared escalation paths: alias -> preferred targets, nearest first.
///
/// In YAML:
/// ```yaml
/// paths:
///   U:Qa: [U:Ox]
///   U:Vz: [U:Ar, U:Ox]
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EscalationPaths {
    /// alias -> targets in order of preference.
    #[serde(default)]
    pub paths: HashMap<String, Vec<String>>,
}

/// One resolved hop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolution {
    /// The next party: a Volk alias or [`HUMAN`].
    pub target: String,
    /// The whole path so far, ending with `target`.
    pub path: Vec<String>,
}

impl Resolution {
    /// Whether the matter left the hierarchy.
    pub fn is_human(&self) -> bool {
        self.target == HUMAN
    }
}

impl EscalationPaths {
    /// Parses the YAML form (see the type docs).
    pub fn from_yaml(text: &str) -> Result<Self, AgentError> {
        serde_yaml_ng::from_str(text).map_err(|e| AgentError::Config {
            field: "escalation.paths",
            reason: e.to_string(),
        })
    }

    /// The next party for `alias`, continuing `prior` (the path it was escalated along
    /// so far; empty for a fresh escalation).
    pub fn resolve(
        &self,
        tree: &AgentTree,
        alias: &str,
        prior: &[String],
    ) -> Result<Resolution, AgentError> {
        let node = tree.live(alias).ok_or_else(|| AgentError::UnknownAgent {
            field: "alias",
            alias: alias.to_owned(),
        })?;
        let declared = self.paths.get(alias).and_then(|targets| {
            let ancestors = tree.ancestors(alias);
            targets
                .iter()
                .find(|t| tree.live(t).is_some() && ancestors.contains(t))
        });
        let target = declared
            .cloned()
            .or_else(|| node.parent.clone().filter(|p| tree.live(p).is_some()))
            .unwrap_or_else(|| HUMAN.to_owned());
        let mut path = Vec::with_capacity(prior.len() + 2);
        path.extend(prior.iter().cloned());
        if path.last().map(String::as_str) != Some(alias) {
            path.push(alias.to_owned());
        }
        path.push(target.clone());
        Ok(Resolution { target, path })
    }
}
