//! ISSUE-14 "Cypher read-only check bypassed": `knowledge.query` refuses a writing
//! query whatever Unicode whitespace, control characters or comments surround its
//! keywords (ERR-007: -32602 `mutation_not_allowed`), and the check never panics on any
//! input. The checker is exercised directly (proptest) and through a real gateway over
//! loopback with a real governance engine.

mod support;

use orchestrata::gateway::cypher::{validate, CypherError, WRITE_KEYWORDS};
use orchestrata::governance::GovernanceConfig;
use proptest::prelude::*;
use serde_json::json;
use support::ws::{self, READ_ONLY_TOKEN};

fn refused_keyword(q: &str) -> Option<String> {
    match validate(q) {
        Err(CypherError::Mutation { keyword, .. }) => Some(keyword),
        _ => None,
    }
}

// ISSUE-14: U+00A0 (and every other Unicode space or control character) between
// keywords separates them, as it does for Neo4j.
#[test]
fn unicode_spaces_and_control_characters_separate_keywords() {
    for (q, k) in [
        ("MATCH (n)\u{a0}DETACH\u{a0}DELETE n", "DETACH"),
        ("MATCH (n) WITH n\u{2028}SET n.x = 1", "SET"),
        ("MATCH (n)\u{3000}DELETE\u{3000}n", "DELETE"),
        ("MATCH (n)\u{85}REMOVE n.x", "REMOVE"),
        ("MATCH (n)\u{0}CREATE (m)", "CREATE"),
        ("MATCH (n)\u{1c}MERGE (m)", "MERGE"),
        ("MATCH (n)\u{200b}DELETE n", "DELETE"),
        ("MATCH (n) \u{17f}et n.x = 1", "SET"),
        // Characters Rust takes for letters or digits that Neo4j may not: a keyword
        // glued to one is still a keyword.
        ("MATCH (n)\u{b2}SET n.x = 1", "SET"),
        ("MATCH (n)\u{1d7ce}DELETE n", "DELETE"),
        ("MATCH (n) WITH n\u{10400}DELETE n", "DELETE"),
        ("MATCH\u{a0}(n)\u{a0}SET\u{a0}n.x\u{a0}=\u{a0}1", "SET"),
    ] {
        assert_eq!(refused_keyword(q).as_deref(), Some(k), "{q:?}");
        assert_eq!(
            validate(q).map_err(|e| e.reason()),
            Err("mutation_not_allowed")
        );
    }
}

// ISSUE-14: a `//` comment ends at `\r` (Cypher: '//' ~[\r\n]*); the keyword after it
// is a clause.
#[test]
fn a_line_comment_ends_at_carriage_return() {
    for (q, k) in [
        ("MATCH (n) // look\rDETACH DELETE n", "DETACH"),
        ("MATCH (n) // look\r\nSET n.x = 1", "SET"),
        ("MATCH (n) //\rDELETE n", "DELETE"),
    ] {
        assert_eq!(refused_keyword(q).as_deref(), Some(k), "{q:?}");
    }
    // A comment holding another line end is read both ways: a keyword after U+2028
    // is refused too, and a quote after it cannot open a string that hides what follows.
    assert_eq!(
        refused_keyword("MATCH (n) // x\u{2028}SET n.x = 1\nRETURN n").as_deref(),
        Some("SET")
    );
    assert!(validate("MATCH (n) // x\u{2028}'\nDETACH DELETE n //'").is_err());
    // Reading queries with such text still pass.
    for q in [
        "MATCH (n)\u{a0}RETURN\u{a0}n",
        "MATCH (n) // a comment\rRETURN n",
        "MATCH (n:`SET\u{a0}DELETE`) WHERE n.name = 'DETACH\u{2028}DELETE' RETURN n",
        "MATCH (n) WHERE n.name = 'caf\u{e9}' RETURN n.\u{e9}t\u{e9}",
        "MATCH (n:Caf\u{e9}) RETURN n.\u{4e2d}\u{6587} AS \u{540d}",
    ] {
        assert!(validate(q).is_ok(), "{q:?}: {:?}", validate(q));
    }
    // Separators become one plain space in the pattern governance is asked about.
    assert_eq!(
        validate("MATCH (n)\u{a0}\u{2028}RETURN n")
            .expect("read-only")
            .pattern,
        "MATCH (n) RETURN n"
    );
}

/// A separator between tokens: Unicode spaces, control characters, block comments with
/// any text, line comments ended by `\n`, `\r` or `\r\n`.
fn separator() -> impl Strategy<Value = String> {
    let space = prop::sample::select(vec![
        " ", "\t", "\n", "\r", "\u{b}", "\u{c}", "\u{0}", "\u{1}", "\u{1c}", "\u{1f}", "\u{7f}",
        "\u{85}", "\u{a0}", "\u{1680}", "\u{2000}", "\u{2007}", "\u{200a}", "\u{2028}", "\u{2029}",
        "\u{202f}", "\u{205f}", "\u{3000}",
    ])
    .prop_map(str::to_owned);
    let block = any::<String>()
        .prop_filter("no comment end", |t| !t.contains("*/"))
        .prop_map(|t| format!("/*{t}*/"));
    let line = (
        any::<String>().prop_filter("no line end", |t| !t.contains(['\n', '\r'])),
        prop::sample::select(vec!["\n", "\r", "\r\n"]),
    )
        .prop_map(|(t, end)| format!("//{t}{end}"));
    prop::collection::vec(prop_oneof![4 => space, 1 => block, 1 => line], 1..4)
        .prop_map(|parts| parts.concat())
}

/// A writing keyword in random letter case.
fn keyword() -> impl Strategy<Value = String> {
    (prop::sample::select(WRITE_KEYWORDS.to_vec()), any::<u32>()).prop_map(|(k, mask)| {
        k.chars()
            .enumerate()
            .map(|(i, c)| {
                if mask >> (i % 32) & 1 == 1 {
                    c.to_ascii_lowercase()
                } else {
                    c
                }
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    // ISSUE-14: the checker reads any text without panicking.
    #[test]
    fn the_checker_never_panics(q in any::<String>()) {
        let _ = validate(&q);
    }

    // ISSUE-14: the checker never panics on Cypher-like text either.
    #[test]
    fn the_checker_never_panics_on_cypher_like_text(
        parts in prop::collection::vec(
            prop_oneof![
                separator(),
                keyword(),
                prop::sample::select(vec!["'", "\"", "`", "\\", "//", "/*", "*/", ";", "$", ".", ":", "MATCH", "(n)"])
                    .prop_map(str::to_owned),
                any::<String>(),
            ],
            0..12,
        )
    ) {
        let _ = validate(&parts.concat());
    }

    // ISSUE-14 ERR-007: a writing keyword as a token of its own is refused, whatever
    // whitespace and comments surround it.
    #[test]
    fn a_writing_keyword_between_any_separators_is_refused(
        before in separator(),
        k in keyword(),
        after in separator(),
        tail in prop::sample::select(vec!["n", "(m)", "n.x = 1", "INDEX i", "db.labels()"]),
    ) {
        let q = format!("MATCH (n){before}{k}{after}{tail}");
        prop_assert!(
            matches!(validate(&q), Err(CypherError::Mutation { .. })),
            "{q:?}: {:?}", validate(&q)
        );
    }
}

// ISSUE-14 ERR-007: through a real gateway, both bypasses answer -32602
// mutation_not_allowed before governance or Neo4j is asked.
#[tokio::test]
async fn the_gateway_refuses_both_bypasses_as_mutation_not_allowed() {
    let stack =
        support::stack::Governed::start(ws::test_config(), GovernanceConfig::default()).await;
    let mut c = stack.connect().await;
    c.auth(READ_ONLY_TOKEN).await;
    for cypher in [
        "MATCH (n)\u{a0}DETACH\u{a0}DELETE n",
        "MATCH (n) // harmless\rDETACH DELETE n",
    ] {
        let e = c.err("knowledge.query", json!({"cypher": cypher})).await;
        assert_eq!(e["code"], -32602, "{cypher:?}: {e}");
        assert_eq!(
            e["data"]["reason"], "mutation_not_allowed",
            "{cypher:?}: {e}"
        );
        assert_eq!(e["data"]["field"], "cypher");
    }
    c.ok("gateway.ping", json!({})).await;
}
