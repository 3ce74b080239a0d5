//! The requirement -> tests traceability table, `docs/traceability.md`.
//!
//! Every test names the requirements it proves in a comment directly above it:
//!
//! ```text
//! // REQ-004-US-004-011
//! #[test]
//! fn acknowledged_cannot_go_back_to_queued() { ... }
//! ```
//!
//! This test scans the workspace's Rust sources for those comments, builds the table,
//! and fails when `docs/traceability.md` is stale. Regenerate it with
//!
//! ```text
//! ORCHESTRATA_UPDATE_TRACEABILITY=1 cargo test --test traceability
//! ```
//!
//! When the specifications are beside the checkout (`../shared/specs`), the table also
//! carries each requirement's text and a per-spec coverage summary.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

/// Where a requirement is proven: `path::test_name`.
type Citations = BTreeMap<String, BTreeSet<String>>;

const SOURCE_DIRS: [&str; 4] = ["schemas", "projections", "src", "tests"];
const DOC: &str = "docs/traceability.md";

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n == "target") {
                continue;
            }
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Requirement ids on a `// REQ-...` comment line, or `None` for any other line.
fn requirement_ids(line: &str) -> Option<Vec<String>> {
    let comment = line.trim_start().strip_prefix("//")?.trim();
    if !comment.starts_with("REQ-") {
        return None;
    }
    let ids: Vec<String> = comment
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|word| word.starts_with("REQ-") && word.len() > 8)
        .map(|word| word.trim_end_matches(['.', ':', ';']).to_owned())
        .collect();
    (!ids.is_empty()).then_some(ids)
}

/// The name of the function declared on `line`, if any.
fn fn_name(line: &str) -> Option<&str> {
    let rest = line.trim_start();
    let rest = rest.strip_prefix("pub ").unwrap_or(rest);
    let rest = rest.strip_prefix("async ").unwrap_or(rest);
    let rest = rest.strip_prefix("fn ")?;
    let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_'))?;
    Some(&rest[..end])
}

/// Scans one file: each run of requirement comments attaches to the next `fn`,
/// skipping attributes and further comments in between.
fn scan(root: &Path, file: &Path, citations: &mut Citations) {
    let Ok(text) = fs::read_to_string(file) else {
        return;
    };
    let rel = file
        .strip_prefix(root)
        .unwrap_or(file)
        .display()
        .to_string();
    let mut pending: Vec<String> = Vec::new();
    for line in text.lines() {
        if let Some(ids) = requirement_ids(line) {
            pending.extend(ids);
            continue;
        }
        if pending.is_empty() {
            continue;
        }
        if let Some(name) = fn_name(line) {
            for id in pending.drain(..) {
                citations
                    .entry(id)
                    .or_default()
                    .insert(format!("`{rel}::{name}`"));
            }
            continue;
        }
        let trimmed = line.trim_start();
        let between = trimmed.starts_with("#[")
            || trimmed.starts_with("//")
            || trimmed.is_empty()
            || trimmed.starts_with(')')
            || trimmed.starts_with(']');
        if !between {
            pending.clear();
        }
    }
}

/// Requirement id -> text, read from the specification files when present.
fn spec_requirements(root: &Path) -> BTreeMap<String, String> {
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

fn spec_of(id: &str) -> &str {
    id.get(..7).unwrap_or(id)
}

fn render(citations: &Citations, specs: &BTreeMap<String, String>) -> String {
    let mut doc = String::from(
        "# Traceability: requirement -> tests\n\n\
         Generated by `tests/traceability.rs` from the `// REQ-...` comments above each test. \
         Do not edit by hand; regenerate with\n\
         `ORCHESTRATA_UPDATE_TRACEABILITY=1 cargo test --test traceability`.\n\n",
    );
    if !specs.is_empty() {
        doc.push_str("## Coverage by specification\n\n| spec | requirements | with a test |\n|---|---|---|\n");
        let mut per_spec: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
        for id in specs.keys() {
            let entry = per_spec.entry(spec_of(id)).or_default();
            entry.0 += 1;
            if citations.contains_key(id) {
                entry.1 += 1;
            }
        }
        for (spec, (total, covered)) in per_spec {
            let _ = writeln!(doc, "| {spec} | {total} | {covered} |");
        }
        doc.push('\n');
    }
    doc.push_str("## Requirements with tests\n\n| requirement | text | tests |\n|---|---|---|\n");
    for (id, tests) in citations {
        let text = specs
            .get(id)
            .map(String::as_str)
            .unwrap_or("(not in the specifications: an issue's own requirement)");
        let tests: Vec<&str> = tests.iter().map(String::as_str).collect();
        let _ = writeln!(
            doc,
            "| {id} | {} | {} |",
            text.replace('|', "\\|"),
            tests.join("<br>")
        );
    }
    doc
}

// Traceability is itself a requirement of the project brief: requirement -> tests.
#[test]
fn traceability_table_is_current() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in SOURCE_DIRS {
        rust_files(&root.join(dir), &mut files);
    }
    files.sort();
    let mut citations = Citations::new();
    for file in &files {
        scan(root, file, &mut citations);
    }
    assert!(
        !citations.is_empty(),
        "no `// REQ-...` comments found above any test"
    );
    let specs = spec_requirements(root);
    let doc = render(&citations, &specs);
    let path = root.join(DOC);
    if std::env::var_os("ORCHESTRATA_UPDATE_TRACEABILITY").is_some() {
        fs::write(&path, &doc).unwrap_or_else(|e| panic!("cannot write {DOC}: {e}"));
        return;
    }
    let current = fs::read_to_string(&path).unwrap_or_default();
    if specs.is_empty() {
        // Without the specifications beside the checkout only the ids can be compared.
        for id in citations.keys() {
            assert!(current.contains(id.as_str()), "{DOC} lacks {id}");
        }
        return;
    }
    assert!(
        current == doc,
        "{DOC} is stale: regenerate with ORCHESTRATA_UPDATE_TRACEABILITY=1 cargo test --test traceability"
    );
}

#[test]
fn comment_scanner_attaches_ids_to_the_next_test() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("sample.rs");
    fs::write(
        &file,
        "// REQ-004-US-001-013 REQ-004-US-001-002\n#[test]\nfn uuid_checked() {}\n\
         // REQ-004-US-009-001\nlet x = 1;\nfn not_a_test() {}\n",
    )
    .expect("write sample");
    let mut citations = Citations::new();
    scan(dir.path(), &file, &mut citations);
    assert_eq!(citations.len(), 2, "{citations:?}");
    assert!(citations["REQ-004-US-001-013"].contains("`sample.rs::uuid_checked`"));
    assert!(!citations.contains_key("REQ-004-US-009-001"));
}
