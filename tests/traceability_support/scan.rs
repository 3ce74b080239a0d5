//! Reading the `// REQ-...` citations out of the sources: which test or bench cites
//! which id, and whether a test runs the real `orchestrata` binary.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// One citing test or bench: `path::name`, and whether it runs the real binary.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Citation {
    pub name: String,
    pub binary: bool,
}

/// Requirement id -> the tests (or benches) that cite it.
pub type Citations = BTreeMap<String, BTreeSet<Citation>>;

/// What marks a function body as running the real binary.
pub const BINARY_MARK: &str = "CARGO_BIN_EXE_orchestrata";

/// Files ending in one of `exts` under `dir`, skipping `target` dirs.
pub fn files(dir: &Path, exts: &[&str], out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if path
                .file_name()
                .is_some_and(|n| n == "target" || n == "node_modules")
            {
                continue;
            }
            files(&path, exts, out);
        } else if path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| exts.contains(&e))
        {
            out.push(path);
        }
    }
}

/// A tag such as `REQ-014-090`, `ISSUE-17` or `ERR-008` (a trailing `:` or `.` allowed).
fn is_tag(word: &str) -> bool {
    let word = word.trim_end_matches(['.', ':', ';']);
    word.contains('-')
        && word.starts_with(|c: char| c.is_ascii_uppercase())
        && word
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '-')
}

/// Requirement ids on a citation comment line: `// REQ-...`, or in scripts
/// `# REQ-...`. A citation line opens with tags of which one is a REQ id
/// (`// ISSUE-17 REQ-014-151 ERR-010: ...`); every REQ id on it is cited, also those
/// after a parenthesis (`// REQ-014-071 (cxp.send), REQ-014-073 (...)`).
pub fn requirement_ids(line: &str) -> Option<Vec<String>> {
    let trimmed = line.trim_start();
    let comment = trimmed
        .strip_prefix("//")
        .or_else(|| trimmed.strip_prefix('#'))?
        .trim();
    let words = || {
        comment
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|word| !word.is_empty())
    };
    let is_req = |word: &&str| word.starts_with("REQ-") && word.len() > 8;
    if !words().take_while(|word| is_tag(word)).any(|w| is_req(&w)) {
        return None;
    }
    let ids: Vec<String> = words()
        .filter(is_req)
        .map(|word| word.trim_end_matches(['.', ':', ';', ')']).to_owned())
        .collect();
    Some(ids)
}

/// The name of the function declared on `line`, if any.
pub fn fn_name(line: &str) -> Option<&str> {
    let rest = line.trim_start();
    let rest = rest.strip_prefix("pub(crate) ").unwrap_or(rest);
    let rest = rest.strip_prefix("pub ").unwrap_or(rest);
    let rest = rest.strip_prefix("async ").unwrap_or(rest);
    let rest = rest.strip_prefix("fn ")?;
    let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_'))?;
    Some(&rest[..end])
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// A function of a file: its name, the type of the `impl` block it is in, its body.
pub struct Function {
    pub name: String,
    pub owner: Option<String>,
    pub body: String,
}

/// The type an `impl` line at column 0 is for: `impl Up {`, `impl Drop for Up {`.
fn impl_type(line: &str) -> Option<String> {
    let rest = line.strip_prefix("impl")?;
    let rest = rest.split(" for ").last().unwrap_or(rest);
    let word = rest
        .trim()
        .trim_start_matches(|c: char| c == '<' || c.is_whitespace())
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .find(|w| !w.is_empty())?;
    Some(word.to_owned())
}

/// The functions of `text`; a body runs from its `fn` line to the next `fn` line
/// indented no deeper.
pub fn functions(text: &str) -> Vec<Function> {
    let lines: Vec<&str> = text.lines().collect();
    let mut starts = Vec::new();
    let mut owner: Option<String> = None;
    for (i, line) in lines.iter().enumerate() {
        if line.starts_with("impl") {
            owner = impl_type(line);
        } else if line.starts_with('}') {
            owner = None;
        }
        if let Some(name) = fn_name(line) {
            let owner = owner.clone().filter(|_| indent(line) > 0);
            starts.push((i, indent(line), name.to_owned(), owner));
        }
    }
    let mut out = Vec::new();
    for (k, (start, depth, name, owner)) in starts.iter().enumerate() {
        let end = starts[k + 1..]
            .iter()
            .find(|(_, d, _, _)| d <= depth)
            .map_or(lines.len(), |(i, _, _, _)| *i);
        out.push(Function {
            name: name.clone(),
            owner: owner.clone(),
            body: lines[*start..end].join("\n"),
        });
    }
    out
}

/// Whether `body` calls `f`: as `Owner::name(` or `Self::name(` when `f` is a method,
/// else as a free `name(` (not a method call `.name(` nor another type's `X::name(`).
fn calls(body: &str, f: &Function) -> bool {
    if let Some(owner) = &f.owner {
        return body.contains(&format!("{owner}::{}(", f.name))
            || body.contains(&format!("Self::{}(", f.name));
    }
    let needle = format!("{}(", f.name);
    body.match_indices(&needle).any(|(at, _)| {
        let before = &body[..at];
        let prev = before.chars().next_back();
        !prev.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.' || c == ':')
    })
}

/// Names of the functions in `funcs` that run the binary: their body names
/// [`BINARY_MARK`] or one of `launchers`, or calls such a function of the same file.
pub fn launching(funcs: &[Function], launchers: &BTreeSet<String>) -> BTreeSet<usize> {
    let mut found: BTreeSet<usize> = funcs
        .iter()
        .enumerate()
        .filter(|(_, f)| {
            f.body.contains(BINARY_MARK) || launchers.iter().any(|l| f.body.contains(l.as_str()))
        })
        .map(|(i, _)| i)
        .collect();
    loop {
        let more: Vec<usize> = funcs
            .iter()
            .enumerate()
            .filter(|(i, f)| !found.contains(i) && found.iter().any(|j| calls(&f.body, &funcs[*j])))
            .map(|(i, _)| i)
            .collect();
        if more.is_empty() {
            return found;
        }
        found.extend(more);
    }
}

/// The call tokens (`Up::start(`, `mcp_command(`) of the support modules' functions
/// that run the binary: every `.rs` file in a sub-directory of `tests/`.
pub fn support_launchers(tests: &Path) -> BTreeSet<String> {
    let mut all = Vec::new();
    files(tests, &["rs"], &mut all);
    let mut out = BTreeSet::new();
    for file in all {
        if file.parent() == Some(tests) {
            continue;
        }
        let Ok(text) = fs::read_to_string(&file) else {
            continue;
        };
        let funcs = functions(&text);
        for i in launching(&funcs, &BTreeSet::new()) {
            let f = &funcs[i];
            out.insert(match &f.owner {
                Some(owner) => format!("{owner}::{}(", f.name),
                None => format!("{}(", f.name),
            });
        }
    }
    out
}

/// Scans one test source: each run of requirement comments attaches to the next
/// `fn`, skipping attributes and further comments in between.
pub fn scan(rel: &str, text: &str, launchers: &BTreeSet<String>, citations: &mut Citations) {
    let funcs = functions(text);
    let running = launching(&funcs, launchers);
    let binary = |name: &str| {
        funcs
            .iter()
            .enumerate()
            .any(|(i, f)| f.name == name && running.contains(&i))
    };
    let mut pending: Vec<String> = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("//") {
            if let Some(ids) = requirement_ids(line) {
                pending.extend(ids);
                continue;
            }
        }
        if pending.is_empty() {
            continue;
        }
        if let Some(name) = fn_name(line) {
            let citation = Citation {
                name: format!("`{rel}::{name}`"),
                binary: binary(name),
            };
            for id in pending.drain(..) {
                citations.entry(id).or_default().insert(citation.clone());
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

/// The first string literal's content at or after `from` in `lines`.
fn first_literal(lines: &[&str], from: usize) -> Option<String> {
    lines.iter().skip(from).take(4).find_map(|line| {
        let start = line.find('"')? + 1;
        let len = line[start..].find('"')?;
        Some(line[start..start + len].to_owned())
    })
}

/// Scans one bench: requirement comments attach to the next `fn` or the next
/// `bench_function(` / `BenchmarkId::new(` scenario (named by its first string
/// literal); in a script (`# REQ-...`), to the script itself.
pub fn scan_bench(rel: &str, text: &str, citations: &mut Citations) {
    let script = !rel.ends_with(".rs");
    let lines: Vec<&str> = text.lines().collect();
    let mut pending: Vec<String> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let comment = if script { "#" } else { "//" };
        if line.trim_start().starts_with(comment) {
            if let Some(ids) = requirement_ids(line) {
                pending.extend(ids);
                continue;
            }
        }
        if pending.is_empty() {
            continue;
        }
        let name = if script {
            Some(String::new())
        } else if let Some(name) = fn_name(line) {
            Some(name.to_owned())
        } else if line.contains("bench_function(") || line.contains("BenchmarkId::new(") {
            first_literal(&lines, i)
        } else {
            None
        };
        if let Some(name) = name {
            let name = if script {
                format!("`{rel}`")
            } else {
                format!("`{rel}::{name}`")
            };
            for id in pending.drain(..) {
                citations.entry(id).or_default().insert(Citation {
                    name: name.clone(),
                    binary: false,
                });
            }
        }
    }
}
