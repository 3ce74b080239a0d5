//! The crate's top-level modules form no cycle (issue 15, "Structure": no
//! kernel <-> agents, no log -> config -> gateway). A module depends on another when
//! its non-test code names `crate::<other>`; the test fails naming a cycle and the
//! files that close it.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir` (recursively), test modules excluded (`tests.rs`,
/// `*_tests.rs`, a `tests/` directory).
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if name != "tests" {
                sources(&path, out);
            }
        } else if name.ends_with(".rs") && name != "tests.rs" && !name.ends_with("_tests.rs") {
            out.push(path);
        }
    }
}

/// The top-level modules `text` names as `crate::<name>`, outside comments and
/// before its first `#[cfg(test)]`.
fn named(text: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let code = text.split("#[cfg(test)]").next().unwrap_or("");
    let mut found = BTreeSet::new();
    for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
        for (at, _) in line.match_indices("crate::") {
            let rest = &line[at + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            // `orchestrata_projections::…` contains `crate::` only as a suffix of an
            // identifier; a path segment starts a word.
            let word_start = at == 0
                || !line[..at]
                    .chars()
                    .last()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
            if word_start && modules.contains(&name) {
                found.insert(name);
            }
        }
    }
    found
}

/// module -> (module it names -> a file that names it).
fn dependencies(src: &Path) -> BTreeMap<String, BTreeMap<String, PathBuf>> {
    let modules: BTreeSet<String> = fs::read_dir(src)
        .expect("src/ is readable")
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let name = name.strip_suffix(".rs").map(str::to_owned).unwrap_or(name);
            (name != "lib" && name != "main").then_some(name)
        })
        .collect();
    let mut deps = BTreeMap::new();
    for module in &modules {
        let mut files = Vec::new();
        sources(&src.join(module), &mut files);
        let single = src.join(format!("{module}.rs"));
        if single.exists() {
            files.push(single);
        }
        let entry: &mut BTreeMap<String, PathBuf> = deps.entry(module.clone()).or_default();
        for file in files {
            let text = fs::read_to_string(&file).expect("source is readable");
            for other in named(&text, &modules) {
                if &other != module {
                    entry.entry(other).or_insert_with(|| file.clone());
                }
            }
        }
    }
    deps
}

/// A cycle through `start`, if any (depth-first search).
fn cycle_from(
    start: &str,
    deps: &BTreeMap<String, BTreeMap<String, PathBuf>>,
) -> Option<Vec<String>> {
    fn walk(
        at: &str,
        start: &str,
        deps: &BTreeMap<String, BTreeMap<String, PathBuf>>,
        path: &mut Vec<String>,
        seen: &mut BTreeSet<String>,
    ) -> bool {
        for next in deps.get(at).into_iter().flat_map(|d| d.keys()) {
            if next == start {
                return true;
            }
            if seen.insert(next.clone()) {
                path.push(next.clone());
                if walk(next, start, deps, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    let mut path = vec![start.to_owned()];
    let mut seen = BTreeSet::new();
    walk(start, start, deps, &mut path, &mut seen).then_some(path)
}

// ISSUE-15 (structure: no module cycles)
#[test]
fn the_top_level_modules_form_no_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let deps = dependencies(&src);
    assert!(deps.contains_key("kernel") && deps.contains_key("gateway"));
    for module in deps.keys() {
        if let Some(cycle) = cycle_from(module, &deps) {
            let hops: Vec<String> = cycle
                .iter()
                .zip(cycle.iter().skip(1).chain(std::iter::once(&cycle[0])))
                .map(|(a, b)| format!("{a} -> {b} ({})", deps[a][b].display()))
                .collect();
            panic!("module cycle: {}", hops.join(", "));
        }
    }
}

// The scan itself: it sees a dependency written as a path, and not one in a comment or
// inside another crate's name.
#[test]
fn a_dependency_is_a_crate_path_in_code() {
    let modules: BTreeSet<String> = ["kernel", "agents"].map(String::from).into();
    let text = "use crate::kernel::Kernel;\n// crate::agents in a comment\nuse orchestrata_projections::agents::AgentTree;\n";
    assert_eq!(named(text, &modules), ["kernel".to_owned()].into());
    let deps = BTreeMap::from([
        (
            "a".to_owned(),
            BTreeMap::from([("b".to_owned(), PathBuf::from("a.rs"))]),
        ),
        (
            "b".to_owned(),
            BTreeMap::from([("a".to_owned(), PathBuf::from("b.rs"))]),
        ),
    ]);
    assert_eq!(cycle_from("a", &deps), Some(vec!["a".into(), "b".into()]));
}
