//! Agents (spec 005 US-001..006): spawn, hierarchy rules, termination cascade,
//! lifespans, escalation, replay. Real sled log, real kernel, real governance.

mod agents_support;

use std::time::Duration;

use agents_support::{env, events, restart};
use orchestrata::agents::limits::{ESCALATION_SUBJECT, HUMAN, TERMINATED_SUBJECT};
use orchestrata::agents::{
    AgentError, AgentKind, EscalationPaths, Lifespan, LifespanSpec, SpawnSpec,
};
use orchestrata::kernel::KernelError;
use orchestrata_schemas::events::{Event, Stream};

fn spec(parent: &str, lifespan: LifespanSpec) -> SpawnSpec {
    SpawnSpec {
        parent: parent.into(),
        driver: "cli".into(),
        purpose: "write code".into(),
        scope: vec!["generate_code".into()],
        lifespan,
        alias: None,
    }
}

fn invalid_field(err: &AgentError) -> &'static str {
    match err {
        AgentError::Kernel(KernelError::InvalidField { field, .. }) => field,
        other => panic!("expected an invalid field, got {other}"),
    }
}

// REQ-005-US-001-001 REQ-005-FR5-001 REQ-005-AC4-001
// T4.1 T7.1: a junior spawns with its identity, scope, parent and lifespan, as events.
#[tokio::test]
async fn spawn_records_identity_scope_parent_and_lifespan() {
    let e = env(false, EscalationPaths::default()).await;
    let alias = e
        .agents
        .spawn(spec("U:Vz", LifespanSpec::Task("task-1".into())))
        .await
        .unwrap();
    let node = e.agents.node(&alias).await.unwrap().unwrap();
    assert_eq!(node.parent.as_deref(), Some("U:Vz"));
    assert_eq!(node.kind, AgentKind::Junior);
    assert_eq!(node.scope, vec!["generate_code".to_string()]);
    assert_eq!(node.lifespan, Lifespan::Task("task-1".into()));
    assert_eq!(node.driver.as_deref(), Some("cli"));
    let vz = e.agents.node("U:Vz").await.unwrap().unwrap();
    assert_eq!(vz.children, vec![alias.clone()]);
    let kinds: Vec<_> = events(&e.log, Stream::VolkLifecycle)
        .await
        .iter()
        .filter(|env| env.record.key == alias)
        .map(|env| env.record.event_type().to_owned())
        .collect();
    assert_eq!(kinds, ["registered", "spawned"]);
}

// REQ-005-US-005-001 REQ-005-FR4-001 REQ-005-AC3-001
// T5.1 T7.3 T15.7: spawn validation: scope, depth, junior cannot spawn, 5 juniors max.
#[tokio::test]
async fn spawn_enforces_scope_depth_and_junior_limits() {
    let e = env(false, EscalationPaths::default()).await;
    let mut outside = spec("U:Vz", LifespanSpec::Task("t".into()));
    outside.scope = vec!["design".into()];
    let err = e.agents.spawn(outside).await.unwrap_err();
    assert_eq!(invalid_field(&err), "scope", "{err}");

    let junior = e
        .agents
        .spawn(spec("U:Vz", LifespanSpec::Task("t".into())))
        .await
        .unwrap();
    let err = e
        .agents
        .spawn(spec(&junior, LifespanSpec::Task("t".into())))
        .await
        .unwrap_err();
    assert_eq!(invalid_field(&err), "parent");
    assert!(err.to_string().contains("Article XII"), "{err}");

    for _ in 0..4 {
        e.agents
            .spawn(spec("U:Vz", LifespanSpec::Task("t".into())))
            .await
            .unwrap();
    }
    let err = e
        .agents
        .spawn(spec("U:Vz", LifespanSpec::Task("t".into())))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("5 live juniors"), "{err}");

    let mut none = spec("U:Ox", LifespanSpec::Task("t".into()));
    none.scope = vec![];
    none.driver = "telepathy".into();
    assert_eq!(
        invalid_field(&e.agents.spawn(none).await.unwrap_err()),
        "driver"
    );
    let err = e
        .agents
        .spawn(spec("U:Zz", LifespanSpec::Deadline(10)))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            AgentError::Kernel(KernelError::UnknownVolk {
                field: "parent",
                ..
            })
        ),
        "{err}"
    );
}

// REQ-005-FR5-001 REQ-005-AC4-001
// T7.2 T7.3: a 3-level hierarchy (U:Ox -> U:Vz -> U:La -> junior) works; nothing below
// depth 3.
#[tokio::test]
async fn depth_limit_counts_levels_from_the_root() {
    let e = env(false, EscalationPaths::default()).await;
    use orchestrata_schemas::events::{Command, CommandKind};
    for (alias, parent) in [("U:La", "U:Vz"), ("U:Lb", "U:La")] {
        let cmd = Command {
            id: uuid::Uuid::new_v4(),
            principal: None,
            issuer: parent.into(),
            action: CommandKind::RegisterVolk {
                alias: alias.into(),
                capabilities: vec!["generate_code".into()],
                parent: Some(parent.into()),
                protocols: vec![],
                metadata: orchestrata_schemas::events::fields::Json(serde_json::json!({})),
            },
        };
        e.kernel.execute(cmd).await.unwrap();
    }
    assert_eq!(e.agents.read(|t| t.depth("U:La")).await.unwrap(), 2);
    let leaf = e
        .agents
        .spawn(spec("U:La", LifespanSpec::Deadline(60_000)))
        .await
        .unwrap();
    let l2 = leaf.clone();
    assert_eq!(e.agents.read(move |t| t.depth(&l2)).await.unwrap(), 3);
    assert_eq!(
        e.agents.read(move |t| t.ancestors(&leaf)).await.unwrap(),
        vec!["U:La".to_string(), "U:Vz".into(), "U:Ox".into()]
    );
    let err = e
        .agents
        .spawn(spec("U:Lb", LifespanSpec::Deadline(10)))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("depth limit 3"), "{err}");
}

// REQ-005-FR6-001 REQ-005-US-005-001
// T5.3 T5.4 T5.5 T7.4: parent facts readable (not writable) by children; siblings isolated;
// parent <-> child talk only.
#[tokio::test]
async fn fact_visibility_and_communication_follow_the_tree() {
    let e = env(false, EscalationPaths::default()).await;
    let a = e
        .agents
        .spawn(spec("U:Vz", LifespanSpec::Task("t".into())))
        .await
        .unwrap();
    let b = e
        .agents
        .spawn(spec("U:Vz", LifespanSpec::Task("t".into())))
        .await
        .unwrap();
    let (a2, b2) = (a.clone(), b.clone());
    let checks = e
        .agents
        .read(move |t| {
            (
                t.may_read_facts(&a2, "U:Vz"),
                t.may_read_facts(&a2, "U:Ox"),
                t.may_write_facts(&a2, "U:Vz"),
                t.may_write_facts(&a2, &a2),
                t.may_read_facts(&a2, &b2),
                t.may_read_facts("U:Vz", &a2),
                t.may_talk(&a2, "U:Vz"),
                t.may_talk(&a2, &b2),
                t.may_talk(&a2, "U:Ox"),
                t.may_write_facts("U:Vz", "U:Vz"),
            )
        })
        .await
        .unwrap();
    assert_eq!(
        checks,
        (true, true, false, false, false, false, true, false, false, true)
    );
}

// REQ-005-US-003-001 REQ-005-FR3-001 REQ-005-AC5-001 REQ-005-FR7-001
// T4.3 T4.4 T4.5 T7.5 T15.6: a parent's termination takes its subtree; the parent of the
// terminated Volk gets a packet; task completion ends task-bound juniors.
#[tokio::test]
async fn termination_cascades_and_notifies_the_parent() {
    let e = env(false, EscalationPaths::default()).await;
    use orchestrata_schemas::events::{Command, CommandKind};
    e.kernel
        .execute(Command {
            id: uuid::Uuid::new_v4(),
            principal: None,
            issuer: "U:Vz".into(),
            action: CommandKind::RegisterVolk {
                alias: "U:Mi".into(),
                capabilities: vec!["generate_code".into()],
                parent: Some("U:Vz".into()),
                protocols: vec![],
                metadata: orchestrata_schemas::events::fields::Json(serde_json::json!({})),
            },
        })
        .await
        .unwrap();
    let j1 = e
        .agents
        .spawn(spec("U:Mi", LifespanSpec::Task("t1".into())))
        .await
        .unwrap();
    let j2 = e
        .agents
        .spawn(spec("U:Mi", LifespanSpec::Task("t2".into())))
        .await
        .unwrap();
    e.agents.terminate("U:Mi", "reorganized").await.unwrap();
    for alias in [&j1, &j2, &"U:Mi".to_string()] {
        assert!(
            !e.agents.node(alias).await.unwrap().unwrap().live,
            "{alias} still live"
        );
    }
    let lifecycle = events(&e.log, Stream::VolkLifecycle).await;
    let terminated: Vec<(String, String)> = lifecycle
        .iter()
        .filter_map(|env| match &env.record.event {
            Event::VolkTerminated(t) => Some((t.alias.clone(), t.reason.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(terminated.len(), 3);
    assert_eq!(terminated[2], ("U:Mi".into(), "reorganized".into()));
    assert!(terminated[0].1.starts_with("parent_terminated"));
    let inbox = e.kernel.inbox("U:Vz", 10).await.unwrap();
    let notice = inbox
        .packets
        .iter()
        .find(|p| p.subject() == TERMINATED_SUBJECT)
        .expect("U:Vz told");
    assert_eq!(notice.payload_json().unwrap()["alias"], "U:Mi");

    let t = e
        .agents
        .spawn(spec("U:Vz", LifespanSpec::Task("build".into())))
        .await
        .unwrap();
    let other = e
        .agents
        .spawn(spec("U:Vz", LifespanSpec::Task("other".into())))
        .await
        .unwrap();
    assert_eq!(
        e.agents.complete_task("build").await.unwrap(),
        vec![t.clone()]
    );
    assert!(!e.agents.node(&t).await.unwrap().unwrap().live);
    assert!(e.agents.node(&other).await.unwrap().unwrap().live);
    let err = e.agents.terminate(&t, "again").await.unwrap_err();
    assert!(
        matches!(err, AgentError::Kernel(KernelError::UnknownVolk { .. })),
        "{err}"
    );
}

// REQ-005-US-003-001 REQ-005-FR3-001 REQ-005-NFR5-001
// T4.3: deadline-bound juniors die on the (paused) clock; session-bound ones with the session.
#[tokio::test]
async fn deadlines_and_sessions_end_juniors() {
    let e = env(false, EscalationPaths::default()).await;
    let short = e
        .agents
        .spawn(spec("U:Vz", LifespanSpec::Deadline(5_000)))
        .await
        .unwrap();
    let long = e
        .agents
        .spawn(spec("U:Vz", LifespanSpec::Deadline(60_000)))
        .await
        .unwrap();
    // Spawning does real I/O (sled), so time runs until both exist; then it is paused
    // and only the supervisor's sleeps move it.
    tokio::time::pause();
    let supervisor = orchestrata::agents::lifespan::supervise(e.agents.clone(), e.clock.clone());
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert!(e.agents.node(&short).await.unwrap().unwrap().live);
    tokio::time::sleep(Duration::from_secs(2)).await;
    for _ in 0..500 {
        if !e.agents.node(&short).await.unwrap().unwrap().live {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        !e.agents.node(&short).await.unwrap().unwrap().live,
        "deadline passed"
    );
    assert!(e.agents.node(&long).await.unwrap().unwrap().live);
    let reason = events(&e.log, Stream::VolkLifecycle)
        .await
        .iter()
        .find_map(|env| match &env.record.event {
            Event::VolkTerminated(t) if t.alias == short => Some(t.reason.clone()),
            _ => None,
        });
    assert_eq!(reason.as_deref(), Some("deadline"));
    supervisor.abort();

    use orchestrata_schemas::events::{Command, CommandKind};
    e.kernel
        .execute(Command {
            id: uuid::Uuid::new_v4(),
            principal: None,
            issuer: "U:Ox".into(),
            action: CommandKind::OpenSession {
                session_id: "s1".into(),
                portfolio_id: "p".into(),
                goals: vec![],
            },
        })
        .await
        .unwrap();
    let bound = e
        .agents
        .spawn(spec("U:Vz", LifespanSpec::Session("s1".into())))
        .await
        .unwrap();
    let ended = e.agents.close_session("U:Ox", "s1", "done").await.unwrap();
    assert_eq!(ended, vec![bound]);
    let err = e
        .agents
        .spawn(spec("U:Vz", LifespanSpec::Session("s1".into())))
        .await
        .unwrap_err();
    assert!(
        matches!(err, AgentError::Kernel(KernelError::SessionClosed { .. })),
        "{err}"
    );
}

// REQ-005-US-002-001 REQ-005-US-006-001 REQ-005-FR7-001 REQ-005-NFR4-001 REQ-005-AC4-001
// T6.2 T6.3 T6.4 T2.5: one hop up per escalation, context in the packet to the parent;
// beyond the root, the human queue keeps the context; declared paths win.
#[tokio::test]
async fn escalation_goes_up_then_to_the_human_queue() {
    let paths = EscalationPaths::from_yaml("paths:\n  U:Qa: [U:Ox]\n").unwrap();
    let e = env(false, paths).await;
    let j = e
        .agents
        .spawn(spec("U:Vz", LifespanSpec::Task("t".into())))
        .await
        .unwrap();
    let ctx = serde_json::json!({"file": "main.rs", "issues": 3});
    let first = e
        .agents
        .escalate(&j, "outside my scope", None, ctx.clone(), &[])
        .await
        .unwrap();
    assert_eq!(first.target, "U:Vz");
    assert_eq!(first.path, vec![j.clone(), "U:Vz".into()]);
    let inbox = e.kernel.inbox("U:Vz", 10).await.unwrap();
    let packet = inbox
        .packets
        .iter()
        .find(|p| p.subject() == ESCALATION_SUBJECT)
        .expect("parent notified");
    assert_eq!(packet.payload_json().unwrap()["context"], ctx);
    assert_eq!(packet.from_agent().as_str(), j);

    let second = e
        .agents
        .escalate("U:Vz", "needs a decision", None, ctx.clone(), &first.path)
        .await
        .unwrap();
    assert_eq!(second.target, "U:Ox");
    let third = e
        .agents
        .escalate("U:Ox", "needs a human", None, ctx.clone(), &second.path)
        .await
        .unwrap();
    assert_eq!(third.target, HUMAN);
    assert_eq!(
        third.path,
        vec![j.clone(), "U:Vz".into(), "U:Ox".into(), HUMAN.into()]
    );
    let queue = e.agents.human_queue().await.unwrap();
    assert_eq!(queue.len(), 1);
    assert_eq!(queue[0].context, ctx);
    assert_eq!(queue[0].path, third.path);

    // Deterministic: the same tree and config resolve the same way every time.
    let again = e.agents.read(move |t| {
        let p = EscalationPaths::from_yaml("paths:\n  U:Qa: [U:Ox]\n").unwrap();
        (
            p.resolve(t, "U:Qa", &[]).unwrap(),
            p.resolve(t, "U:Qa", &[]).unwrap(),
        )
    });
    let (a, b) = again.await.unwrap();
    assert_eq!(a, b);
    assert_eq!(a.target, "U:Ox");

    let err = EscalationPaths::from_yaml("routes: {}").unwrap_err();
    assert!(
        matches!(
            err,
            AgentError::Config {
                field: "escalation.paths",
                ..
            }
        ),
        "{err}"
    );
    let err = e
        .agents
        .escalate("U:Zz", "x", None, serde_json::json!({}), &[])
        .await
        .unwrap_err();
    assert!(matches!(err, AgentError::UnknownAgent { .. }), "{err}");
    let err = e
        .agents
        .escalate(&j, "x", None, serde_json::json!([1]), &[])
        .await
        .unwrap_err();
    assert_eq!(invalid_field(&err), "context");
}

// REQ-005-US-005-001 REQ-005-AC3-001 REQ-005-FR4-001
// T5.1 T15.7: with governance, spawn and escalation are decided by the default policy.
#[tokio::test]
async fn governance_decides_spawns_and_escalations() {
    let e = env(true, EscalationPaths::default()).await;
    let j = e
        .agents
        .spawn(spec("U:Vz", LifespanSpec::Task("t".into())))
        .await
        .unwrap();
    let r = e
        .agents
        .escalate(&j, "help", None, serde_json::json!({}), &[])
        .await
        .unwrap();
    assert_eq!(r.target, "U:Vz");
    let decisions = events(&e.log, Stream::GovernanceDecisions).await;
    let actions: Vec<String> = decisions
        .iter()
        .filter_map(|env| match &env.record.event {
            Event::DecisionRecorded(d) => Some(d.action.clone()),
            _ => None,
        })
        .collect();
    assert!(actions.iter().any(|a| a == "volk.register"), "{actions:?}");
    assert!(actions.iter().any(|a| a == "cxp.escalate"), "{actions:?}");
}

// REQ-005-NFR4-001 REQ-005-FR3-001
// T12.3 T12.4: the tree is a fold of the log: a restarted kernel has the same tree and queue.
#[tokio::test]
async fn a_restart_replays_the_same_tree() {
    let e = env(false, EscalationPaths::default()).await;
    let a = e
        .agents
        .spawn(spec("U:Vz", LifespanSpec::Deadline(60_000)))
        .await
        .unwrap();
    let b = e
        .agents
        .spawn(spec("U:Vz", LifespanSpec::Task("t".into())))
        .await
        .unwrap();
    e.agents.terminate(&b, "done").await.unwrap();
    e.agents
        .escalate("U:Ox", "to human", None, serde_json::json!({"k": 1}), &[])
        .await
        .unwrap();
    let before = e
        .agents
        .read(|t| (t.snapshot(), t.human_queue().to_vec()))
        .await
        .unwrap();
    e.kernel.stop().await;
    let env2 = restart(e.dir, e.log, false, EscalationPaths::default()).await;
    let after = env2
        .agents
        .read(|t| (t.snapshot(), t.human_queue().to_vec()))
        .await
        .unwrap();
    assert_eq!(before, after);
    assert!(after.0[&a].live);
    assert!(!after.0[&b].live);
}

// REQ-005-FR8-001 REQ-005-NFR1-001
// T8.2 T10.1 T11.4 T14.3: metrics count spawns, queries, escalations, live agents; 100+
// agents in a 3-level tree stay correct under concurrent spawns. (That an operator reads
// them on the gateway's /metrics: tests/workflow_gateway.rs.)
#[tokio::test]
async fn metrics_and_many_agents() {
    let e = env(false, EscalationPaths::default()).await;
    use orchestrata_schemas::events::{Command, CommandKind};
    let mut seniors = Vec::new();
    for lo in 'a'..='v' {
        let alias = format!("U:Z{lo}");
        e.kernel
            .execute(Command {
                id: uuid::Uuid::new_v4(),
                principal: None,
                issuer: "U:Ox".into(),
                action: CommandKind::RegisterVolk {
                    alias: alias.clone(),
                    capabilities: vec!["generate_code".into()],
                    parent: Some("U:Vz".into()),
                    protocols: vec![],
                    metadata: orchestrata_schemas::events::fields::Json(serde_json::json!({})),
                },
            })
            .await
            .unwrap();
        seniors.push(alias);
    }
    let mut handles = Vec::new();
    for (i, s) in seniors.iter().enumerate() {
        for k in 0..5 {
            let agents = e.agents.clone();
            let mut sp = spec(s, LifespanSpec::Task(format!("t{i}")));
            sp.alias = Some(format!(
                "U:{}{}",
                (b'A' + (i as u8)) as char,
                (b'f' + k) as char
            ));
            handles.push(tokio::spawn(async move { agents.spawn(sp).await }));
        }
    }
    for h in handles {
        h.await.unwrap().unwrap();
    }
    let live = e.agents.read(|t| t.live_count()).await.unwrap();
    let roster = orchestrata::kernel::roster::STANDARD_ROSTER.len();
    assert_eq!(live, roster + seniors.len() + seniors.len() * 5);
    assert!(live >= 100, "{live}");
    e.agents
        .escalate("U:Ox", "x", None, serde_json::json!({}), &[])
        .await
        .unwrap();
    let m = e.agents.metrics();
    assert_eq!(
        m.spawn_seconds.get_sample_count(),
        (seniors.len() * 5) as u64
    );
    assert_eq!(m.escalations.with_label_values(&["human"]).get(), 1);
    assert!(m.queries.get() > 0);
    assert_eq!(m.live.get(), live as i64);
    let registry = prometheus::Registry::new();
    m.register(&registry).unwrap();
    let text = prometheus::TextEncoder::new()
        .encode_to_string(&registry.gather())
        .unwrap();
    assert!(
        text.contains(&format!("orchestrata_agents_live {live}")),
        "{text}"
    );
}
