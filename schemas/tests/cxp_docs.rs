//! The versioning documentation spec 004 US-010 asks for is there and names the
//! version the code speaks: breaking changes in CHANGELOG.md, and the migration guide,
//! compatibility matrix and deprecation timeline in docs/protocol.md.

use std::path::Path;

use orchestrata_schemas::cxp::{CURRENT_VERSION, SUPPORTED_VERSIONS};

fn read(relative: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The text of the section under `heading` (a line equal to it) up to the next heading
/// of the same or a higher level.
fn section<'a>(text: &'a str, heading: &str) -> &'a str {
    let level = heading.chars().take_while(|c| *c == '#').count();
    let start = text
        .lines()
        .position(|l| l.trim() == heading)
        .unwrap_or_else(|| panic!("no section {heading:?}"));
    let lines: Vec<&str> = text.lines().collect();
    let end = lines[start + 1..]
        .iter()
        .position(|l| {
            let hashes = l.chars().take_while(|c| *c == '#').count();
            hashes > 0 && hashes <= level
        })
        .map_or(lines.len(), |i| start + 1 + i);
    let from = lines[..start + 1]
        .iter()
        .map(|l| l.len() + 1)
        .sum::<usize>();
    let to = lines[..end].iter().map(|l| l.len() + 1).sum::<usize>();
    &text[from.min(text.len())..to.min(text.len())]
}

// REQ-004-US-010-020
#[test]
fn the_changelog_states_the_breaking_changes_of_the_current_version() {
    let changelog = read("CHANGELOG.md");
    let heading = format!("## CXP protocol {CURRENT_VERSION} — unreleased");
    let current = if changelog.lines().any(|l| l.trim() == heading) {
        section(&changelog, &heading)
    } else {
        section(&changelog, &format!("## CXP protocol {CURRENT_VERSION}"))
    };
    let breaking = section(current, "### Breaking changes");
    assert!(
        breaking.lines().any(|l| l.trim_start().starts_with("- ")),
        "the breaking changes of {CURRENT_VERSION} are listed (\"None\" is a listing): {breaking:?}"
    );
}

// REQ-004-US-010-021 REQ-004-US-010-022 REQ-004-US-010-023
#[test]
fn protocol_docs_carry_the_migration_guide_matrix_and_deprecation_timeline() {
    let protocol = read("docs/protocol.md");
    let versioning = section(&protocol, "## Versioning");
    assert!(
        versioning.contains(&format!("Current version {CURRENT_VERSION}")),
        "docs/protocol.md names the current version {CURRENT_VERSION}"
    );
    let matrix = section(versioning, "### Compatibility matrix");
    for v in SUPPORTED_VERSIONS {
        let row = format!("| {}.{}.x |", v.major, v.minor);
        assert!(
            matrix.contains(&row),
            "the matrix has a row for supported version {v}: {matrix}"
        );
    }
    assert!(matrix.contains("rejected") && matrix.contains("compatible"));
    let timeline = section(versioning, "### Deprecation timeline");
    assert!(
        timeline.contains("deprecated"),
        "the timeline says what is deprecated: {timeline}"
    );
    let guide = section(versioning, "### Migration guide");
    assert!(guide.trim().len() > 40, "a migration guide: {guide}");
}
