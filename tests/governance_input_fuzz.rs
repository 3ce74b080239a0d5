//! ISSUE-14 "Governance that cannot be broken by input": client text that reaches a
//! Prolog goal (a Cypher pattern, a client id, a method, context values) is inert data
//! whatever characters it holds. Real gateway over loopback, real governance engine
//! (default policy), real sled log in a temp dir.

mod support;

use orchestrata::governance::term::{quote_atom, quote_string};
use orchestrata::governance::{
    Evaluator, Fact, FactChange, GovernanceConfig, PacketFact, Policy, PolicyFile, Request,
    DEFAULT_INFERENCE_LIMIT,
};
use orchestrata_schemas::events::types::DecisionResult;
use proptest::prelude::*;
use serde_json::{json, Value};
use support::ws::{self, READ_ONLY_TOKEN, TOKEN};

/// The governed stack under the default policy, with the test tokens.
async fn start() -> support::stack::Governed {
    support::stack::Governed::start(ws::test_config(), GovernanceConfig::default()).await
}

fn reason(error: &Value) -> &str {
    error["data"]["reason"].as_str().unwrap_or("")
}

/// A `knowledge.query` answer that governance judged: allowed (then Neo4j, absent
/// here, answers `neo4j_unavailable`) or denied by the policy with a normal trace, never
/// a fail-closed denial.
fn assert_judged(response: &Value, cypher: &str) {
    let e = &response["error"];
    match reason(e) {
        "neo4j_unavailable" => assert_eq!(e["code"], -32603, "{cypher:?}: {e}"),
        "governance_denied" => {
            assert_eq!(e["code"], -32001, "{cypher:?}: {e}");
            assert!(e["data"]["decision_id"].is_string(), "{e}");
            let trace = e["data"]["rule_trace"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            assert!(
                !trace.is_empty() && !trace.contains(&json!("fail_closed")),
                "{cypher:?}: {e}"
            );
        }
        other => panic!("{cypher:?}: answered {other:?}: {response}"),
    }
}

// ISSUE-14: one knowledge.query holding U+00A0 (or U+2028, a lone combining mark, a
// control character) panicked the governance thread inside scryer's query parser, and
// from then on every governed method, for every client, answered insufficient_scope.
#[tokio::test]
async fn a_query_holding_unicode_spaces_is_judged_and_governance_keeps_answering() {
    let stack = start().await;
    let mut viewer = stack.client(READ_ONLY_TOKEN).await;
    for cypher in [
        "MATCH (n)\u{a0}RETURN n",
        "MATCH (n:`a\u{a0}b`) RETURN n",
        "MATCH (n:`x\u{2028}y\u{301}\u{7}'\\`) RETURN n",
        "MATCH (n:`\u{1F600}\u{0}\u{85}`) RETURN n",
    ] {
        let r = viewer
            .call("knowledge.query", json!({"cypher": cypher}))
            .await;
        assert_judged(&r, cypher);
        // The same client, and a new one, are still served.
        viewer.ok("gateway.ping", json!({})).await;
    }
    let mut operator = stack.client(TOKEN).await;
    operator.ok("gateway.ping", json!({})).await;
    operator.ok("volk.list", json!({})).await;
    assert!(stack.governance.policy_hash().is_some());
}

/// The default policy in a fresh engine.
fn default_evaluator() -> Evaluator {
    Evaluator::load(&Policy::default_policy(), DEFAULT_INFERENCE_LIMIT).expect("default policy")
}

/// Texts that used to break the reader or might: Unicode spaces and line separators,
/// lone combining marks, control characters (NUL included), quotes, backslashes, the
/// escape syntax itself, and code points beyond the BMP.
const HOSTILE: &[&str] = &[
    "a\u{a0}b",
    "\u{2028}",
    "\u{2029}x",
    "\u{301}",
    "e\u{301}",
    "\u{0}",
    "\u{1}\u{7}\u{1b}\u{7f}\u{85}\u{9f}",
    "\n\r\t\u{b}\u{c}",
    "'",
    "''",
    "\\",
    "\\'",
    "\\x41\\",
    "x'), halt, ('",
    "\u{feff}\u{200b}\u{200d}",
    "\u{1F600}\u{10FFFF}",
    "\u{d7ff}\u{e000}\u{fffd}",
    "caf\u{e9} \u{4e2d}\u{6587}",
    "[]",
    "{}",
    "",
    " ",
    "%",
    "/*",
    ".",
    "end_of_file",
    "-",
    "+",
    "\\+",
    ":-",
    "?-",
    "-->",
    "=..",
    "$",
    "*",
    "//",
    "^",
    "dynamic",
    "discontiguous",
    "initialization",
    "is",
    "mod",
    "xor",
    "table",
    ",",
    "|",
    ";",
    "!",
    "a,b",
];

// ISSUE-14: every text reaches the engine as the same atom: escaped in pure ASCII,
// read back unchanged (escapes above 0xFF included).
#[test]
fn any_text_round_trips_through_the_reader_as_the_same_atom() {
    let mut ev = default_evaluator();
    for text in HOSTILE {
        let goal = format!("X = {}, atom(X)", quote_atom(text));
        assert!(goal.is_ascii(), "{goal}");
        let answer = ev.query(&goal).expect("the reader accepts it");
        let bound = answer.and_then(|b| b.get("X").cloned());
        assert_eq!(bound.as_deref(), Some(*text), "{text:?} via {goal}");
        // The atom has as many characters as the text.
        let goal = format!("atom_length({}, L)", quote_atom(text));
        let length = ev
            .query(&goal)
            .expect("atom_length")
            .and_then(|b| b.get("L").cloned());
        assert_eq!(length, Some(text.chars().count().to_string()), "{text:?}");
    }
}

// ISSUE-15: thread ids and payload references reach the engine as strings (no atom per
// packet): every text is read back as the same string, never as code.
#[test]
fn any_text_round_trips_through_the_reader_as_the_same_string() {
    let mut ev = default_evaluator();
    for text in HOSTILE.iter().filter(|t| !t.is_empty()) {
        let goal = format!("X = {}, atom_chars(A, X)", quote_string(text));
        assert!(goal.is_ascii(), "{goal}");
        let answer = ev.query(&goal).expect("the reader accepts it");
        let bound = answer.and_then(|b| b.get("A").cloned());
        assert_eq!(bound.as_deref(), Some(*text), "{text:?} via {goal}");
    }
}

// ISSUE-14: a policy's non-ASCII atoms (written raw or escaped in its source) match the
// same text asked by a client.
#[test]
fn a_policy_fact_with_non_ascii_atoms_matches_the_same_text_from_a_request() {
    let mut files: Vec<PolicyFile> = Policy::default_policy().files().to_vec();
    let decide = files
        .iter_mut()
        .find(|f| f.name == "decide.pl")
        .expect("decide.pl");
    decide.text = decide.text.replace(
        "%% --- Gateway (spec 014)",
        "decide(client('caf\u{e9}'), 'lire', 'r\\xa0\\\\x2028\\\\x1F600\\', _, allow) :- !,\n    \
         rule(unicode_fact).\n%% --- Gateway (spec 014)",
    );
    let policy = Policy::from_files("test:unicode", files);
    let mut ev = Evaluator::load(&policy, DEFAULT_INFERENCE_LIMIT).expect("policy loads");
    let asked = Request::client("caf\u{e9}", "lire", "r\u{a0}\u{2028}\u{1F600}");
    let outcome = ev.decide(&asked).expect("decided");
    assert_eq!(outcome.result, DecisionResult::Allow, "{outcome:?}");
    assert_eq!(outcome.trace, ["unicode_fact"]);
    // One character different: not the same atom.
    let other = Request::client("cafe\u{301}", "lire", "r\u{a0}\u{2028}\u{1F600}");
    assert_eq!(
        ev.decide(&other).expect("decided").result,
        DecisionResult::Deny
    );
}

/// Any text, drawn from the whole Unicode range, weighted towards the characters that
/// matter to a Prolog reader.
fn text() -> impl Strategy<Value = String> {
    let special = prop::sample::select(HOSTILE.to_vec()).prop_map(str::to_owned);
    let chars = prop::collection::vec(
        prop_oneof![
            3 => any::<char>(),
            1 => prop::sample::select(vec!['\'', '\\', '"', '`', '\u{a0}', '\u{2028}', '\u{301}', '\u{0}', '\n', '(', ')', ',', '.', '%']),
        ],
        0..24,
    )
    .prop_map(|cs| cs.into_iter().collect::<String>());
    prop_oneof![special, chars]
}

/// A JSON context value: text, numbers, booleans, null, lists and objects of them.
fn context_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        text().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        any::<bool>().prop_map(Value::from),
        Just(Value::Null),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map(text(), inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    // ISSUE-14: whatever text reaches subject, action, resource and context keys and
    // values, the real engine answers allow or deny with a normal trace; it never
    // panics and never fails.
    #[test]
    fn any_request_text_is_judged_by_the_real_engine(
        volk in any::<bool>(),
        subject in text(),
        action in prop_oneof![
            text(),
            prop::sample::select(vec!["gateway.execute", "gateway.subscribe", "gateway.access", "knowledge.query", "cxp.send", "cxp.priority", "volk.register"]).prop_map(str::to_owned),
        ],
        resource in text(),
        context in prop::collection::btree_map(
            prop_oneof![text(), prop::sample::select(vec!["scope", "required", "session", "priority", "parent", "thread", "subject"]).prop_map(str::to_owned)],
            context_value(),
            0..4,
        ),
    ) {
        thread_local! {
            static ENGINE: std::cell::RefCell<Evaluator> = std::cell::RefCell::new(default_evaluator());
        }
        let mut request = if volk {
            Request::volk(&subject, &action, &resource)
        } else {
            Request::client(&subject, &action, &resource)
        };
        request.context = context;
        prop_assert!(request.goal_text().is_ascii());
        let outcome = ENGINE.with(|ev| ev.borrow_mut().decide(&request));
        let outcome = outcome.map_err(|e| TestCaseError::fail(format!("{request:?}: {e}")))?;
        prop_assert!(
            matches!(outcome.result, DecisionResult::Allow | DecisionResult::Deny | DecisionResult::Escalate),
            "{outcome:?}"
        );
        prop_assert!(!outcome.trace.is_empty(), "{request:?}: {outcome:?}");
        prop_assert!(!outcome.trace.iter().any(|t| t == "fail_closed"), "{outcome:?}");
    }
}

// ISSUE-14: facts folded from client-written events (aliases, subjects, session ids)
// are written with the same quoting: any text asserts, is found and retracts.
#[test]
fn facts_holding_any_text_assert_match_and_retract() {
    let mut ev = default_evaluator();
    for text in HOSTILE {
        let fact = Fact::VolkCapability((*text).to_owned(), format!("{text}-cap"));
        ev.apply(&[FactChange::Assert(fact.clone())])
            .expect("asserted");
        let goal = format!("volk_capability({}, C)", quote_atom(text));
        let found = ev
            .query(&goal)
            .expect("queried")
            .and_then(|b| b.get("C").cloned());
        assert_eq!(found, Some(format!("{text}-cap")), "{text:?}");
        ev.apply(&[FactChange::Retract(fact)]).expect("retracted");
        assert_eq!(ev.query(&goal).expect("queried"), None, "{text:?}");
    }
}

// ISSUE-14: the deepest context a client can send (serde_json stops at 128 levels) and
// a wide one are judged, not fatal to the engine thread.
#[test]
fn deep_and_wide_context_values_are_judged() {
    let mut ev = default_evaluator();
    let mut deep = json!("leaf");
    for _ in 0..128 {
        deep = json!([deep]);
    }
    let mut deep_map = json!(1);
    for _ in 0..128 {
        deep_map = json!({ "k": deep_map });
    }
    let wide = Value::from(
        (0..20_000)
            .map(|i| format!("v{i}\u{a0}"))
            .collect::<Vec<_>>(),
    );
    for value in [deep, deep_map, wide] {
        let request = Request::client("dashboard", "gateway.execute", "volk.list")
            .with("scope", "read_only")
            .with("required", "read_only")
            .with("extra", value);
        let outcome = ev.decide(&request).expect("decided");
        assert!(!outcome.trace.is_empty(), "{outcome:?}");
    }
}

// ISSUE-14: the subject of a `cxp.send` reaches the subject-ownership rules
// (`ctx_subject/2`) as a string; a subject of any JSON type or any text is judged by
// them, never fatal, and the routes still decide by the subject's characters.
#[test]
fn a_send_subject_of_any_type_or_text_is_judged_by_the_route_rules() {
    let mut ev = default_evaluator();
    for v in ["U:Ox", "U:Qa", "U:Vz"] {
        ev.apply(&[
            FactChange::Assert(Fact::Volk(
                v.into(),
                "none".into(),
                "senior".into(),
                "none".into(),
            )),
            FactChange::Assert(Fact::VolkStatus(v.into(), "active".into())),
        ])
        .expect("volk facts");
    }
    let mut decide = |from: &str, to: &str, subject: Value| {
        let mut request = Request::volk(from, "cxp.send", to);
        request.context.insert("subject".into(), subject.clone());
        let outcome = ev.decide(&request).expect("decided");
        assert!(
            !outcome.trace.iter().any(|t| t == "fail_closed"),
            "{subject}: {outcome:?}"
        );
        (outcome.result, outcome.trace)
    };
    let mut odd = vec![
        json!(5),
        json!(1.5),
        json!({"a": 1}),
        json!([1, "x"]),
        json!(null),
    ];
    odd.extend([
        json!(true),
        json!(""),
        json!("review_code\n"),
        json!("REVIEW_CODE"),
    ]);
    odd.extend(HOSTILE.iter().map(|t| json!(t)));
    for subject in odd {
        let (result, trace) = decide("U:Qa", "U:Ox", subject.clone());
        assert_eq!(result, DecisionResult::Allow, "{subject}: {trace:?}");
        assert!(
            !trace.iter().any(|t| t == "subject_not_owned"),
            "{subject}: {trace:?}"
        );
    }
    // A routed subject is still recognised by its characters: U:Qa may not send
    // review_code to U:Ox (Article X), U:Ox may send it to U:Qa.
    let (result, trace) = decide("U:Qa", "U:Ox", json!("review_code"));
    assert_eq!(result, DecisionResult::Deny, "{trace:?}");
    assert!(trace.iter().any(|t| t == "subject_not_owned"), "{trace:?}");
    let (result, trace) = decide("U:Ox", "U:Qa", json!("review_code"));
    assert_eq!(result, DecisionResult::Allow, "{trace:?}");
    assert!(trace.iter().any(|t| t == "sanctioned_route"), "{trace:?}");
}

// ISSUE-18: a packet's subject is stored as a string in `cxp_packet/12` (an atom per
// free-text subject would stay in scryer's atom table for good): reading it back as
// characters gives the same text, whatever it holds.
#[test]
fn a_packet_subject_reads_back_from_cxp_packet_as_the_same_string() {
    let mut ev = default_evaluator();
    for (i, text) in HOSTILE.iter().filter(|t| !t.is_empty()).enumerate() {
        let packet = PacketFact {
            message_id: format!("00000000-0000-4000-8000-{i:012}"),
            from: "U:Ox".into(),
            to: "U:Qa".into(),
            thread_id: format!("t-{i}"),
            subject: (*text).to_owned(),
            delivery: "queued".into(),
            work: "pending".into(),
            session: "none".into(),
            ..PacketFact::default()
        };
        let thread = quote_string(&packet.thread_id);
        ev.apply(&[FactChange::Assert(Fact::Packet(packet))])
            .expect("packet fact");
        let goal = format!("cxp_packet(_,_,_,{thread},S,_,_,_,_,_,_,_), atom_chars(A, S)");
        let bound = ev
            .query(&goal)
            .expect("the subject is a list of characters")
            .and_then(|b| b.get("A").cloned());
        assert_eq!(bound.as_deref(), Some(*text), "{text:?}");
    }
}
