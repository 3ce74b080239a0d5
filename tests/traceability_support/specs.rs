//! The requirement texts (from the specifications beside the checkout) and the ids we
//! argue instead of proving (`docs/traceability-argued.md`).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// Requirement id -> text, read from the specification files when present.
pub fn requirements(root: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Ok(entries) = fs::read_dir(root.join("../shared/specs")) else {
        return out;
    };
    let mut files: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    files.sort();
    for file in files {
        let Ok(text) = fs::read_to_string(&file) else {
            continue;
        };
        for line in text.lines() {
            let line = line.trim_start_matches('`');
            if !line.starts_with("REQ-") {
                continue;
            }
            let mut parts = line.splitn(2, |c: char| c == '`' || c.is_whitespace());
            let id = parts.next().unwrap_or_default().to_owned();
            let rest = parts.next().unwrap_or_default();
            let fields: Vec<&str> = rest
                .split('\t')
                .map(str::trim)
                .filter(|f| !f.is_empty())
                .collect();
            let text = if fields.len() >= 3 {
                // 004 / 005 tables: id, done, text, traced-by.
                fields[1].to_owned()
            } else {
                // 014 lines: "id done text... count".
                let words: Vec<&str> = rest.split_whitespace().collect();
                let body = words.get(1..words.len().saturating_sub(1)).unwrap_or(&[]);
                body.join(" ")
            };
            out.entry(id).or_insert(text);
        }
    }
    out
}

/// `REQ-005-NFR2-001` -> `REQ-005`.
pub fn spec_of(id: &str) -> &str {
    id.get(..7).unwrap_or(id)
}

/// Id -> the reason we depart from it, from the rows of a Markdown table whose first
/// cell lists one or more ids (`REQ-014-069, REQ-014-122`) and whose second gives the
/// reason. Fails on an id listed twice or a row without a reason.
pub fn argued(text: &str) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let Some(row) = line.trim().strip_prefix('|') else {
            continue;
        };
        let cells: Vec<&str> = row.split(" | ").map(str::trim).collect();
        let first = cells.first().copied().unwrap_or_default();
        if !first.starts_with("REQ-") {
            continue;
        }
        let reason = cells
            .get(1)
            .map(|r| r.trim_end_matches('|').trim())
            .unwrap_or_default();
        if reason.is_empty() {
            return Err(format!("argued row without a reason: {line}"));
        }
        for id in first.split([',', ' ']).filter(|w| w.starts_with("REQ-")) {
            if out.insert(id.to_owned(), reason.to_owned()).is_some() {
                return Err(format!("{id} is argued twice"));
            }
        }
    }
    Ok(out)
}
