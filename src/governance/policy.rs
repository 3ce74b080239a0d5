//! A policy: the set of `.pl` files governance decides with, and its content hash.
//!
//! A policy is a *bundle* of files (sorted by name). Its text, as recorded in the
//! `policy loaded` event, is the files joined with a marker line before each one:
//!
//! ```text
//! %%% orchestrata-policy-file: gateway.pl
//! gateway_access(C, admin) :- registered_admin(C).
//! ...
//! ```
//!
//! The policy hash is the SHA-256 of that text, so a decision's `policy_hash` names
//! exactly the rules that made it, and [`Policy::from_bundle`] rebuilds the files from
//! the log for an offline audit.

use std::path::Path;

use sha2::{Digest, Sha256};

use super::GovernanceError;

const MARKER: &str = "%%% orchestrata-policy-file: ";

/// The default policy shipped in the binary (`policies/default/*.pl`).
const DEFAULT_FILES: [(&str, &str); 4] = [
    (
        "constitution.pl",
        include_str!("../../policies/default/constitution.pl"),
    ),
    ("cxp.pl", include_str!("../../policies/default/cxp.pl")),
    (
        "decide.pl",
        include_str!("../../policies/default/decide.pl"),
    ),
    (
        "gateway.pl",
        include_str!("../../policies/default/gateway.pl"),
    ),
];

/// One policy file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyFile {
    /// File name, e.g. `gateway.pl` (the `source_file` of its rules).
    pub name: String,
    /// Its Prolog text.
    pub text: String,
}

/// A loaded-or-loadable policy: its files, bundle text and hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    origin: String,
    files: Vec<PolicyFile>,
    text: String,
    hash: String,
}

impl Policy {
    /// A policy from files (sorted by name for a stable hash). `origin` says where it
    /// came from, for the `policy loaded` event.
    pub fn from_files(origin: impl Into<String>, mut files: Vec<PolicyFile>) -> Self {
        files.sort_by(|a, b| a.name.cmp(&b.name));
        let mut text = String::new();
        for file in &files {
            text.push_str(MARKER);
            text.push_str(&file.name);
            text.push('\n');
            text.push_str(&file.text);
            if !file.text.ends_with('\n') {
                text.push('\n');
            }
        }
        let hash = hash_text(&text);
        Policy {
            origin: origin.into(),
            files,
            text,
            hash,
        }
    }

    /// The default policy embedded in the binary.
    pub fn default_policy() -> Self {
        Policy::from_files(
            "builtin:default",
            DEFAULT_FILES
                .iter()
                .map(|(name, text)| PolicyFile {
                    name: (*name).to_owned(),
                    text: (*text).to_owned(),
                })
                .collect(),
        )
    }

    /// Every `*.pl` file of `dir`.
    pub fn from_dir(dir: &Path) -> Result<Self, GovernanceError> {
        let read_err = |source: std::io::Error| GovernanceError::PolicyRead {
            path: dir.display().to_string(),
            source,
        };
        let mut files = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(read_err)? {
            let path = entry.map_err(read_err)?.path();
            if path.extension().and_then(|e| e.to_str()) != Some("pl") {
                continue;
            }
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default()
                .to_owned();
            let text =
                std::fs::read_to_string(&path).map_err(|source| GovernanceError::PolicyRead {
                    path: path.display().to_string(),
                    source,
                })?;
            files.push(PolicyFile { name, text });
        }
        if files.is_empty() {
            return Err(GovernanceError::PolicyEmpty {
                path: dir.display().to_string(),
            });
        }
        Ok(Policy::from_files(dir.display().to_string(), files))
    }

    /// Rebuilds a policy from the text recorded in a `policy loaded` event.
    pub fn from_bundle(origin: impl Into<String>, text: &str) -> Self {
        let mut files: Vec<PolicyFile> = Vec::new();
        for line in text.split_inclusive('\n') {
            if let Some(name) = line.strip_prefix(MARKER) {
                files.push(PolicyFile {
                    name: name.trim_end().to_owned(),
                    text: String::new(),
                });
            } else if let Some(file) = files.last_mut() {
                file.text.push_str(line);
            } else {
                files.push(PolicyFile {
                    name: "policy.pl".into(),
                    text: line.to_owned(),
                });
            }
        }
        // Keep the recorded text and its hash as they are: an altered text must not
        // silently take the hash of the original.
        let origin = origin.into();
        Policy {
            origin,
            files,
            text: text.to_owned(),
            hash: hash_text(text),
        }
    }

    /// Where the policy came from.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Its files, sorted by name.
    pub fn files(&self) -> &[PolicyFile] {
        &self.files
    }

    /// The bundle text recorded on the log.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// SHA-256 of [`Policy::text`], hex.
    pub fn hash(&self) -> &str {
        &self.hash
    }
}

/// SHA-256 of a policy text, lowercase hex.
pub fn hash_text(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}
