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
//! Benches cite the ids they measure the same way, above the bench function or the
//! `bench_function("...")` scenario (`# REQ-...` in a script under `benches/`, which
//! cites the script). Every id a bench cites must appear in `docs/performance.md`,
//! beside its figure and threshold.
//!
//! A test **runs the real binary** (marked **bin**) when its body, or a function of
//! the same file it calls (transitively), names `CARGO_BIN_EXE_orchestrata` or calls a
//! support-module function that does: any function of a `.rs` file in a sub-directory
//! of `tests/` whose body (or a same-file function it calls) names the binary, called
//! as `Type::name(` for a method (`Up::start(`, `Up::with_config(`, `Mcp::ready(`) or
//! `name(` for a free function (`mcp_command(`). Tests on the in-process stack
//! (`tests/support/stack.rs`) do not count.
//!
//! Ids we depart from on purpose are listed with their reason in
//! `docs/traceability-argued.md`. The test fails when an argued id is not in the
//! specifications, is also cited by a test or bench (the argument is stale), or when
//! `docs/traceability.md` is stale. Regenerate it with
//!
//! ```text
//! ORCHESTRATA_UPDATE_TRACEABILITY=1 cargo test --test traceability
//! ```
//!
//! When the specifications are beside the checkout (`../shared/specs`), the table also
//! carries each requirement's text, a per-spec summary and the ids still open.

mod traceability_support;

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use traceability_support::render::{render, Inputs};
use traceability_support::scan::{self, Citations};
use traceability_support::specs;

const SOURCE_DIRS: [&str; 4] = ["schemas", "projections", "src", "tests"];
const DOC: &str = "docs/traceability.md";
const ARGUED: &str = "docs/traceability-argued.md";
const PERFORMANCE: &str = "docs/performance.md";

fn relative(root: &Path, file: &Path) -> String {
    file.strip_prefix(root)
        .unwrap_or(file)
        .display()
        .to_string()
}

/// Test citations of every Rust source of the workspace.
fn test_citations(root: &Path) -> Citations {
    let launchers = scan::support_launchers(&root.join("tests"));
    let mut files = Vec::new();
    for dir in SOURCE_DIRS {
        scan::files(&root.join(dir), &["rs"], &mut files);
    }
    files.sort();
    let mut citations = Citations::new();
    for file in &files {
        if let Ok(text) = fs::read_to_string(file) {
            scan::scan(&relative(root, file), &text, &launchers, &mut citations);
        }
    }
    citations
}

/// Bench citations under `benches/`.
fn bench_citations(root: &Path) -> Citations {
    let mut files = Vec::new();
    scan::files(&root.join("benches"), &["rs", "py", "sh"], &mut files);
    files.sort();
    let mut citations = Citations::new();
    for file in &files {
        if let Ok(text) = fs::read_to_string(file) {
            scan::scan_bench(&relative(root, file), &text, &mut citations);
        }
    }
    citations
}

// Traceability is itself a requirement of the project brief: requirement -> tests.
#[test]
fn traceability_table_is_current() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tests = test_citations(root);
    assert!(
        !tests.is_empty(),
        "no `// REQ-...` comments found above any test"
    );
    let benches = bench_citations(root);
    let performance = fs::read_to_string(root.join(PERFORMANCE)).unwrap_or_default();
    for id in benches.keys() {
        assert!(
            performance.contains(id.as_str()),
            "{id} is cited by a bench: state its figure and threshold beside the id in {PERFORMANCE}"
        );
    }
    let argued_text = fs::read_to_string(root.join(ARGUED)).unwrap_or_default();
    let argued = specs::argued(&argued_text).unwrap_or_else(|e| panic!("{ARGUED}: {e}"));
    for id in argued.keys() {
        assert!(
            !tests.contains_key(id) && !benches.contains_key(id),
            "{id} is argued in {ARGUED} but also cited by a test or bench: drop the argument or the citation"
        );
    }
    let specs = specs::requirements(root);
    if !specs.is_empty() {
        for id in argued.keys() {
            assert!(
                specs.contains_key(id),
                "{id} is argued in {ARGUED} but is not in the specifications"
            );
        }
    }
    let doc = render(&Inputs {
        tests: &tests,
        benches: &benches,
        specs: &specs,
        argued: &argued,
    });
    let path = root.join(DOC);
    if std::env::var_os("ORCHESTRATA_UPDATE_TRACEABILITY").is_some() {
        fs::write(&path, &doc).unwrap_or_else(|e| panic!("cannot write {DOC}: {e}"));
        return;
    }
    let current = fs::read_to_string(&path).unwrap_or_default();
    if specs.is_empty() {
        // Without the specifications beside the checkout only the ids can be compared.
        for id in tests.keys() {
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
    let text = concat!(
        "// REQ-004-US-001-013 REQ-004-US-001-002\n#[test]\nfn uuid_checked() {}\n",
        "// REQ-004-US-009-001\nlet x = 1;\nfn not_a_test() {}\n",
        "// ISSUE-17 REQ-014-151 ERR-010: tags first\n",
        "#[tokio::test]\nasync fn tagged() {}\n",
        "// See REQ-014-998 for why.\nfn prose() {}\n",
    );
    let mut citations = Citations::new();
    scan::scan("sample.rs", text, &BTreeSet::new(), &mut citations);
    assert_eq!(citations.len(), 3, "{citations:?}");
    assert_eq!(name_of(&citations, "REQ-014-151"), "`sample.rs::tagged`");
    let names: Vec<&str> = citations["REQ-004-US-001-013"]
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(names, ["`sample.rs::uuid_checked`"]);
    assert!(!citations.contains_key("REQ-004-US-009-001"));
}

#[test]
fn a_test_runs_the_binary_through_its_helpers_and_the_support_launchers() {
    let dir = tempfile::tempdir().expect("temp dir");
    let support = dir.path().join("support");
    fs::create_dir(&support).expect("support dir");
    fs::write(
        support.join("up.rs"),
        "pub struct Up;\nimpl Up {\n    pub fn start() -> Up {\n        let _ = env!(\"CARGO_BIN_EXE_orchestrata\");\n        Up\n    }\n\
         \n    pub fn observe() {\n        let _ = Up::start();\n    }\n\n    pub fn pid(&self) {}\n}\n\
         pub struct Core;\nimpl Core {\n    pub fn start() -> Core {\n        Core\n    }\n}\n",
    )
    .expect("write support");
    let launchers = scan::support_launchers(dir.path());
    let want: BTreeSet<String> = ["Up::start(", "Up::observe("].map(String::from).into();
    assert_eq!(launchers, want);
    let text = concat!(
        "fn up() -> Up {\n    Up::start()\n}\n",
        "// REQ-014-001\n#[test]\nfn through_a_helper() {\n    let _u = up();\n}\n",
        "// REQ-014-002\n#[test]\nfn in_process() {\n    let _c = Core::start();\n    x.up();\n}\n",
        "// REQ-014-003\n#[test]\nfn directly() {\n    Up::observe();\n}\n",
    );
    let mut citations = Citations::new();
    scan::scan("t.rs", text, &launchers, &mut citations);
    let binary = |id: &str| citations[id].iter().all(|c| c.binary);
    assert!(binary("REQ-014-001"));
    assert!(!binary("REQ-014-002"));
    assert!(binary("REQ-014-003"));
}

#[test]
fn bench_citations_name_the_scenario_or_the_script() {
    let text = concat!(
        "fn bench(c: &mut Criterion) {\n    // REQ-005-FR1-001 REQ-005-AC1-001\n    let x = 1;\n",
        "    g.bench_function(\"spawn\", |b| {});\n    // REQ-005-FR2-001\n",
        "    g.bench_function(\n        format!(\"escalation/depth{d}\"),\n    );\n}\n",
    );
    let mut citations = Citations::new();
    scan::scan_bench("benches/agents.rs", text, &mut citations);
    let name = |id: &str| citations[id].iter().next().map(|c| c.name.clone());
    assert_eq!(
        name("REQ-005-AC1-001").as_deref(),
        Some("`benches/agents.rs::spawn`")
    );
    assert_eq!(
        name("REQ-005-FR2-001").as_deref(),
        Some("`benches/agents.rs::escalation/depth{d}`")
    );
    let mut citations = Citations::new();
    scan::scan_bench(
        "benches/x.py",
        "#!/usr/bin/env python3\n# REQ-005-NFR6-001\ndef main(): pass\n",
        &mut citations,
    );
    assert_eq!(name_of(&citations, "REQ-005-NFR6-001"), "`benches/x.py`");
}

fn name_of(citations: &Citations, id: &str) -> String {
    citations[id].iter().map(|c| c.name.clone()).collect()
}

#[test]
fn argued_rows_list_ids_with_a_reason_once() {
    let good = "| id | why |\n|---|---|\n| REQ-014-069, REQ-014-122 | replay from the log |\n| REQ-004-SUCC-001 | a checklist |\n";
    let argued = specs::argued(good).expect("parses");
    assert_eq!(argued.len(), 3);
    assert_eq!(argued["REQ-014-122"], "replay from the log");
    assert!(specs::argued("| REQ-014-069 | |\n").is_err());
    assert!(specs::argued("| REQ-014-069 | a |\n| REQ-014-069 | b |\n").is_err());
}
