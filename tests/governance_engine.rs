//! Governance engine mechanics: fail-closed, cache and reload, dry runs, rule listing
//! and the facts checkpoint. Real engine, real sled log.

mod governance_support;

use governance_support::*;
use orchestrata::governance::{GovernanceConfig, Request};
use orchestrata_schemas::events::types::DecisionResult::{Allow, Deny};
use orchestrata_schemas::events::{Event, Stream};

// REQ-014-ERR-011
#[tokio::test]
async fn a_prolog_error_fails_closed_uncached_and_recorded() {
    let env = sled_env().await;
    let dir = default_policy_dir_with(&[("zz_boom.pl", "boom_guard(X) :- X = 1.\n")]);
    // decide.pl is replaced by one that throws for 'gateway.execute' of 'boom'
    let decide = orchestrata::governance::Policy::default_policy().files().iter()
        .find(|f| f.name == "decide.pl").unwrap().text
        .replace("%% --- Gateway (spec 014)", "decide(_, 'gateway.execute', boom, _, _) :- !, throw(kaboom).\n%% --- Gateway (spec 014)");
    std::fs::write(dir.path().join("decide.pl"), decide).unwrap();
    let g = governance_in(&env, dir.path()).await;
    let boom = || Request::client("ops-admin", "gateway.execute", "boom");
    let d = g.decide(boom()).await.unwrap();
    assert_eq!(d.result, Deny);
    assert_eq!(d.trace, vec!["fail_closed"]);
    assert!(
        d.error.as_deref().unwrap().contains("kaboom"),
        "{:?}",
        d.error
    );
    // not cached: the second answer is evaluated again
    let d2 = g.decide(boom()).await.unwrap();
    assert!(!d2.cached && d2.error.is_some());
    let rec = recorded_decision(&env.log, d.sequence).await;
    assert!(rec.reason.as_deref().unwrap().contains("kaboom"));
    assert!(rec
        .query
        .as_deref()
        .unwrap()
        .contains("\"error_kind\":\"prolog\""));
    // a runaway rule is stopped by the inference limit and denied
    let looping = orchestrata::governance::Policy::default_policy()
        .files()
        .iter()
        .find(|f| f.name == "decide.pl")
        .unwrap()
        .text
        .replace(
            "%% --- Gateway (spec 014)",
            "decide(_, spin, _, _, R) :- !, spin_forever(R).\n%% --- Gateway (spec 014)",
        )
        + "\nspin_forever(R) :- spin_forever(R).\n";
    std::fs::write(dir.path().join("decide.pl"), looping).unwrap();
    g.load_policy_dir(dir.path()).await.unwrap();
    let d = g.decide(Request::volk("U:Ox", "spin", "x")).await.unwrap();
    assert_eq!(d.result, Deny);
    assert!(
        d.error.as_deref().unwrap().contains("inference_limit"),
        "{:?}",
        d.error
    );
}

// REQ-014-ERR-011
#[tokio::test]
async fn an_unavailable_engine_denies_uncached_but_serves_cached_decisions() {
    let env = sled_env().await;
    let g = governance(&env).await;
    let cached = || Request::client("ops-admin", "gateway.execute", "volk.register");
    assert_eq!(g.decide(cached()).await.unwrap().result, Allow);
    g.stop_engine();
    let d = g.decide(cached()).await.unwrap();
    assert!(d.cached);
    assert_eq!(d.result, Allow, "ERR-011: cached decisions still serve");
    let d = g
        .decide(Request::client("ops-admin", "gateway.execute", "cxp.send"))
        .await
        .unwrap();
    assert_eq!(d.result, Deny);
    assert!(
        d.error.as_deref().unwrap().contains("unavailable"),
        "{:?}",
        d.error
    );
    let rec = recorded_decision(&env.log, d.sequence).await;
    assert_eq!(rec.rule_trace, vec!["fail_closed"]);
    assert!(rec
        .query
        .as_deref()
        .unwrap()
        .contains("\"error_kind\":\"engine\""));
}

// The caller polls for its answer for about 100 µs before it parks (engine.rs,
// REPLY_SPIN): a policy that works for milliseconds is awaited, not failed closed,
// and its latency is recorded.
// REQ-014-033
// REQ-014-ERR-011
#[tokio::test]
async fn a_decision_slower_than_the_callers_polling_window_is_awaited_and_recorded() {
    let env = sled_env().await;
    let dir = default_policy_dir_with(&[]);
    let slow = orchestrata::governance::Policy::default_policy()
        .files()
        .iter()
        .find(|f| f.name == "decide.pl")
        .unwrap()
        .text
        .replace(
            "%% --- Gateway (spec 014)",
            "decide(_, slow, _, _, allow) :- !, rule(slow_but_bounded), count_down(50000).\n\
             %% --- Gateway (spec 014)",
        )
        + "\ncount_down(0) :- !.\ncount_down(N) :- N1 is N - 1, count_down(N1).\n";
    std::fs::write(dir.path().join("decide.pl"), slow).unwrap();
    let g = governance_in(&env, dir.path()).await;
    let d = g.decide(Request::volk("U:Ox", "slow", "x")).await.unwrap();
    assert_eq!((d.result, d.error.as_deref()), (Allow, None));
    assert_eq!(d.trace, vec!["slow_but_bounded"]);
    // The policy's 50,000 counted steps keep the engine busy past the caller's polling
    // window, so the answer arrives through the awaited channel.
    let rec = recorded_decision(&env.log, d.sequence).await;
    assert_eq!(
        rec.latency_us,
        i64::try_from(d.latency.as_micros()).unwrap()
    );
    // The engine answers the next, quick decision as before.
    let quick = g
        .decide(Request::client(
            "ops-admin",
            "gateway.execute",
            "volk.register",
        ))
        .await
        .unwrap();
    assert_eq!((quick.result, quick.error), (Allow, None));
}

// Decisions asked at once queue on the one engine thread; callers that find others
// ahead park instead of polling (engine.rs, Engine::queued). Each still gets its own
// answer, none fails closed.
// REQ-014-032
// REQ-014-ERR-011
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_decisions_each_get_their_own_answer() {
    let env = sled_env().await;
    let g = governance(&env).await;
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..32 {
        let g = g.clone();
        tasks.spawn(async move {
            // Dry runs skip the cache, so every one is evaluated by the engine.
            let (client, expected) = if i % 2 == 0 {
                ("ops-admin", Allow)
            } else {
                ("stranger", Deny)
            };
            let d = g
                .evaluate(Request::client(client, "gateway.execute", "volk.register"))
                .await
                .unwrap();
            (client, expected, d)
        });
    }
    let mut answered = 0;
    while let Some(joined) = tasks.join_next().await {
        let (client, expected, d) = joined.unwrap();
        assert_eq!(
            (d.result, d.error.as_deref(), d.cached),
            (expected, None, false),
            "{client}"
        );
        answered += 1;
    }
    assert_eq!(answered, 32);
}

// REQ-014-103
// REQ-014-104
#[tokio::test]
async fn cache_serves_repeat_decisions_and_is_invalidated_by_a_policy_reload() {
    let env = sled_env().await;
    let dir = default_policy_dir_with(&[]);
    let g = governance_in(&env, dir.path()).await;
    let ask = || Request::client("dashboard", "gateway.execute", "cxp.send");
    let first = g.decide(ask()).await.unwrap();
    assert!(!first.cached);
    let second = g.decide(ask()).await.unwrap();
    assert!(second.cached);
    assert_eq!(second.result, Deny);
    // a decision that read traffic facts (a send in a session between registered
    // Volks reads its send count) is never cached (sessionless sends:
    // tests/governance_reuse.rs)
    register(&env.log, "U:Ox", None).await;
    register(&env.log, "U:Vz", None).await;
    let send = || Request::volk("U:Ox", "cxp.send", "U:Vz").with("session", "s1");
    for _ in 0..2 {
        let d = g.decide(send()).await.unwrap();
        assert_eq!((d.result, d.cached), (Allow, false));
    }
    // promote dashboard to operator: the reload empties the cache
    let clients = std::fs::read_to_string(dir.path().join("clients.pl"))
        .unwrap()
        .replace(
            "registered_operator('operator').",
            "registered_operator('operator').\nregistered_operator('dashboard').",
        );
    std::fs::write(dir.path().join("clients.pl"), clients).unwrap();
    let old_hash = g.policy_hash().unwrap();
    let new_hash = g.load_policy_dir(dir.path()).await.unwrap();
    assert_ne!(old_hash, new_hash);
    let after = g.decide(ask()).await.unwrap();
    assert!(!after.cached);
    assert_eq!(
        (after.result, after.policy_hash.as_str()),
        (Allow, new_hash.as_str())
    );
}

// A predicate the author split on purpose, declared discontiguous, loads and answers.
// REQ-014-104
#[tokio::test]
async fn a_declared_discontiguous_predicate_loads() {
    let env = sled_env().await;
    let g = governance(&env).await;
    let declared = default_policy_dir_with(&[(
        "zz.pl",
        ":- discontiguous(registered_site/1).\nregistered_site(a).\nother(b).\nregistered_site(c).\n",
    )]);
    g.load_policy_dir(declared.path())
        .await
        .expect("a declared discontiguous predicate loads");
    assert_eq!(
        g.decide(Request::client("ops-admin", "gateway.access", "admin"))
            .await
            .unwrap()
            .result,
        Allow
    );
}

// REQ-014-104
#[tokio::test]
async fn a_bad_policy_is_refused_with_file_and_line_and_the_old_one_stays() {
    let env = sled_env().await;
    let g = governance(&env).await;
    let hash = g.policy_hash().unwrap();
    let bad = default_policy_dir_with(&[(
        "gateway.pl",
        "% header\n\nscope_sufficient(admin, _).\nbroken(X) :- .\n",
    )]);
    let err = g.load_policy_dir(bad.path()).await.unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("gateway.pl") && text.contains("line 4"),
        "{text}"
    );
    assert_eq!(g.policy_hash().unwrap(), hash);
    assert_eq!(
        g.decide(Request::client("ops-admin", "gateway.access", "admin"))
            .await
            .unwrap()
            .result,
        Allow
    );
    // redefining a built-in is refused too
    let builtin = default_policy_dir_with(&[("zz.pl", "ok(1).\natom_length(a, 1).\n")]);
    let text = g
        .load_policy_dir(builtin.path())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        text.contains("zz.pl") && text.contains("line 2") && text.contains("atom_length"),
        "{text}"
    );
    // a predicate split by another one is refused where its second group starts
    let split =
        default_policy_dir_with(&[("zz.pl", "site_admin(a).\nsite_client(b).\nsite_admin(c).\n")]);
    let text = g
        .load_policy_dir(split.path())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        text.contains("zz.pl") && text.contains("line 3") && text.contains("site_admin/1"),
        "{text}"
    );
    // each successful load is a policy loaded event with the full text
    let events = env
        .log
        .read(Stream::GovernanceDecisions, 0, None, 10)
        .await
        .unwrap();
    let loads: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.record.event {
            Event::PolicyLoaded(p) => Some(p.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(loads.len(), 1);
    assert_eq!(loads[0].policy_hash, hash);
    assert!(loads[0].text.contains("gateway_can_execute(C, Method) :-"));
}

// REQ-014-041
// REQ-014-042
// REQ-014-043
// REQ-014-044
#[tokio::test]
async fn a_dry_run_returns_the_would_be_result_with_trace_and_one_dry_run_event() {
    let env = sled_env().await;
    let g = governance(&env).await;
    let before = env
        .log
        .bounds(Stream::GovernanceDecisions)
        .await
        .unwrap()
        .count();
    let d = g
        .evaluate(Request::client(
            "dashboard",
            "gateway.execute",
            "volk.register",
        ))
        .await
        .unwrap();
    assert_eq!(d.result, Deny);
    assert_eq!(d.trace, vec!["gateway_can_execute", "not_permitted"]);
    assert_eq!(
        env.log
            .bounds(Stream::GovernanceDecisions)
            .await
            .unwrap()
            .count(),
        before + 1
    );
    let rec = recorded_decision(&env.log, d.sequence).await;
    assert!(rec.dry_run);
    // no other side effect: nothing else on any stream, and the cache was not filled
    for s in [
        Stream::CxpTraffic,
        Stream::VolkLifecycle,
        Stream::SessionEvents,
    ] {
        assert_eq!(env.log.bounds(s).await.unwrap().count(), 0);
    }
    let real = g
        .decide(Request::client(
            "dashboard",
            "gateway.execute",
            "volk.register",
        ))
        .await
        .unwrap();
    assert!(!real.cached);
}

// REQ-014-ERR-016
#[tokio::test]
async fn a_dry_run_that_hits_a_prolog_error_returns_the_error() {
    let env = sled_env().await;
    let decide = orchestrata::governance::Policy::default_policy().files().iter()
        .find(|f| f.name == "decide.pl").unwrap().text
        .replace("%% --- Gateway (spec 014)", "decide(_, broken, _, _, R) :- !, atom_length(123456, R), atom_length(R, foo).\n%% --- Gateway (spec 014)");
    let dir = default_policy_dir_with(&[("decide.pl", &decide)]);
    let g = governance_in(&env, dir.path()).await;
    let d = g
        .evaluate(Request::volk("U:Ox", "broken", "x"))
        .await
        .unwrap();
    assert_eq!(d.result, Deny);
    assert!(
        d.error.as_deref().unwrap().contains("type_error"),
        "{:?}",
        d.error
    );
}

// REQ-014-046
// REQ-014-047
// REQ-014-048
// REQ-014-049
// REQ-014-050
#[tokio::test]
async fn rules_are_listed_by_category_with_file_line_and_search() {
    let env = sled_env().await;
    let g = governance(&env).await;
    let all = g.rules(None, None);
    let cats: std::collections::BTreeSet<_> = all.iter().map(|r| r.category.as_str()).collect();
    for c in ["routing", "permission", "escalation", "budget"] {
        assert!(cats.contains(c), "{c} missing from {cats:?}");
    }
    // grouped: categories come in order
    let order: Vec<_> = all.iter().map(|r| r.category.clone()).collect();
    let mut sorted = order.clone();
    sorted.sort();
    assert_eq!(order, sorted);
    let exec = all
        .iter()
        .find(|r| r.predicate == "gateway_can_execute")
        .unwrap();
    assert_eq!(
        (
            exec.arity,
            exec.source_file.as_str(),
            exec.category.as_str()
        ),
        (2, "gateway.pl", "permission")
    );
    let gateway = orchestrata::governance::Policy::default_policy()
        .files()
        .iter()
        .find(|f| f.name == "gateway.pl")
        .unwrap()
        .text
        .clone();
    let line = gateway
        .lines()
        .position(|l| l.starts_with("gateway_can_execute("))
        .unwrap() as u64
        + 1;
    assert_eq!(exec.line_number, line);
    let budget = g.rules(Some("budget"), None);
    assert!(!budget.is_empty() && budget.iter().all(|r| r.category == "budget"));
    assert!(budget
        .iter()
        .any(|r| r.predicate == "send_budget" && r.arity == 1));
    let found = g.rules(None, Some("CAN_SUB"));
    assert_eq!(
        found
            .iter()
            .map(|r| r.predicate.as_str())
            .collect::<Vec<_>>(),
        vec!["gateway_can_subscribe", "token_can_subscribe"]
    );
    assert!(g.rules(Some("routing"), Some("gateway")).is_empty());
}

// REQ-004-INTG-001
#[tokio::test]
async fn facts_view_checkpoint_restores_positions_and_facts() {
    let env = sled_env().await;
    register(&env.log, "U:Ox", None).await;
    register(&env.log, "U:Vz", None).await;
    let checkpoint = env.dir.path().join("facts.json");
    let config = GovernanceConfig {
        checkpoint: Some(checkpoint.clone()),
        ..Default::default()
    };
    let g = governance_with(&env, config.clone()).await;
    g.checkpoint().await.unwrap();
    g.stop_engine();
    let saved: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&checkpoint).unwrap()).unwrap();
    assert_eq!(saved["positions"]["volk.lifecycle"], 2);
    register(&env.log, "U:Qa", None).await;
    let g2 = governance_with(&env, config).await;
    assert_eq!(g2.facts_positions().await["volk.lifecycle"], 3);
    assert_eq!(
        g2.decide(Request::volk("U:Ox", "cxp.send", "U:Qa"))
            .await
            .unwrap()
            .result,
        Allow
    );
    assert_eq!(
        g2.decide(Request::volk("U:Vz", "cxp.send", "U:Ox"))
            .await
            .unwrap()
            .result,
        Allow
    );
}
