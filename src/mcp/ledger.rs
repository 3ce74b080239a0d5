//! The MCP ledger: one JSON line per decision the MCP server takes (REQ-014-205).
//!
//! Every `tools/call` leaves rows here: a refusal (no token, reused, forged, wrong tool,
//! `approve` on a read-only or unknown tool, unknown tool) gets exactly one row, whose
//! number the refusal carries as `ledger_row`; an approval gets a row; a call let through
//! gets an `allowed` row before it is forwarded (if that row cannot be written, the call
//! is refused: fail closed) and an `executed` / `failed` row with the gateway's answer.
//!
//! Rows carry the SHA-256 of the call's canonical arguments, never the arguments, never
//! an approval token and never the gateway token. The file is append-only; rows are
//! numbered from 1 in file order and numbering resumes after a restart.
//!
//! ```text
//! {"row":7,"at":"2026-11-30T01:02:03.456Z","tool":"cxp_send","decision":"refused","reason":"approval_required","arguments_sha256":"9f2c…"}
//! ```

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use chrono::{SecondsFormat, Utc};
use serde::Serialize;

/// What happened to a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Refused by the MCP server; nothing reached the gateway.
    Refused,
    /// `approve` issued a token.
    Approved,
    /// Let through; about to be forwarded to the gateway.
    Allowed,
    /// Forwarded; the gateway answered with a result.
    Executed,
    /// Forwarded; the gateway answered with an error, or could not be reached.
    Failed,
}

/// One row to append.
#[derive(Debug, Clone, Serialize)]
pub struct Entry<'a> {
    /// The MCP tool name (as called, even when unknown).
    pub tool: &'a str,
    /// The decision.
    pub decision: Decision,
    /// A stable word saying why (`approval_required`, `unknown_tool`, a gateway reason…).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'a str>,
    /// SHA-256 (hex) of the canonical arguments, without `approval_token`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments_sha256: Option<&'a str>,
    /// For `approve` rows: the tool approved (or refused approval).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<&'a str>,
}

#[derive(Serialize)]
struct Row<'a> {
    row: u64,
    at: String,
    #[serde(flatten)]
    entry: &'a Entry<'a>,
}

/// Why the ledger cannot be opened or written.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    /// The file or its directory cannot be created, read or appended to.
    #[error("MCP ledger {path}: {source}")]
    Io {
        /// The ledger file.
        path: PathBuf,
        /// The I/O failure.
        source: std::io::Error,
    },
    /// A row did not serialize (not expected: rows are plain strings and numbers).
    #[error("MCP ledger {path}: row not serializable: {source}")]
    Encode {
        /// The ledger file.
        path: PathBuf,
        /// The encoder's error.
        source: serde_json::Error,
    },
}

/// An open, append-only ledger file.
pub struct Ledger {
    path: PathBuf,
    file: File,
    next_row: u64,
}

impl Ledger {
    /// Opens (creating it and its directory if needed) the ledger at `path`; numbering
    /// continues after the rows already there.
    pub fn open(path: &Path) -> Result<Ledger, LedgerError> {
        let io = |source| LedgerError::Io {
            path: path.to_owned(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .open(path)
            .map_err(io)?;
        let mut rows = 0u64;
        for line in BufReader::new(&file).lines() {
            if !line.map_err(io)?.trim().is_empty() {
                rows += 1;
            }
        }
        Ok(Ledger {
            path: path.to_owned(),
            file,
            next_row: rows + 1,
        })
    }

    /// Where the rows go.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `entry` (flushed to the OS and synced) and returns its row number.
    pub fn record(&mut self, entry: &Entry<'_>) -> Result<u64, LedgerError> {
        let row = self.next_row;
        let mut line = serde_json::to_vec(&Row {
            row,
            at: Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true),
            entry,
        })
        .map_err(|source| LedgerError::Encode {
            path: self.path.clone(),
            source,
        })?;
        line.push(b'\n');
        self.file
            .write_all(&line)
            .and_then(|()| self.file.sync_data())
            .map_err(|source| LedgerError::Io {
                path: self.path.clone(),
                source,
            })?;
        self.next_row += 1;
        Ok(row)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // REQ-014-205
    #[test]
    fn rows_are_numbered_in_order_and_numbering_survives_a_reopen() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("nested").join("ledger.jsonl");
        let mut ledger = Ledger::open(&path).expect("open");
        let entry = Entry {
            tool: "cxp_send",
            decision: Decision::Refused,
            reason: Some("approval_required"),
            arguments_sha256: Some("abc"),
            target: None,
        };
        assert_eq!(ledger.record(&entry).expect("row"), 1);
        assert_eq!(ledger.record(&entry).expect("row"), 2);
        drop(ledger);
        let mut ledger = Ledger::open(&path).expect("reopen");
        assert_eq!(ledger.record(&entry).expect("row"), 3);
        let text = std::fs::read_to_string(&path).expect("read");
        let rows: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("JSON row"))
            .collect();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[2]["row"], 3);
        assert_eq!(rows[2]["decision"], "refused");
        assert_eq!(rows[2]["reason"], "approval_required");
    }

    // REQ-014-205
    #[test]
    fn an_unwritable_ledger_is_a_clear_error_naming_the_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        // A directory where the file should be.
        let err = Ledger::open(dir.path())
            .err()
            .expect("cannot open a directory");
        assert!(
            err.to_string().contains(&dir.path().display().to_string()),
            "{err}"
        );
    }
}
