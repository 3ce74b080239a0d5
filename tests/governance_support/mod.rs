//! Shared helpers of the governance and audit tests: a real sled log in a temp dir and
//! real events appended to it.
#![allow(dead_code)]

use std::sync::Arc;

use chrono::{TimeZone, Utc};
use orchestrata::config::LogConfig;
use orchestrata::governance::{Governance, GovernanceConfig};
use orchestrata::log::EventLog;
use orchestrata_schemas::cxp::{DeliveryStatus, WorkStatus};
use orchestrata_schemas::events::fields::Json;
use orchestrata_schemas::events::session::SessionOpened;
use orchestrata_schemas::events::types::{Packet, PacketPayload};
use orchestrata_schemas::events::volk_lifecycle::{VolkRegistered, VolkSpawned};
use orchestrata_schemas::events::EventRecord;
use uuid::Uuid;

pub struct Env {
    pub dir: tempfile::TempDir,
    pub log: Arc<dyn EventLog>,
}

pub async fn sled_env() -> Env {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = orchestrata::log::open(&LogConfig::sled(dir.path().join("data")))
        .await
        .expect("open sled log");
    Env { dir, log }
}

/// The site principals the tests' policy registers (the shipped policy registers
/// none): `tests/fixtures/policy/clients.pl`.
pub const CLIENTS_PL: &str = include_str!("../fixtures/policy/clients.pl");

/// A directory in `env` holding the default policy plus the test principals.
pub fn test_policy_dir(env: &Env) -> std::path::PathBuf {
    let dir = env.dir.path().join("policy");
    std::fs::create_dir_all(&dir).expect("policy dir");
    for file in orchestrata::governance::Policy::default_policy().files() {
        std::fs::write(dir.join(&file.name), &file.text).expect("write policy");
    }
    std::fs::write(dir.join("clients.pl"), CLIENTS_PL).expect("write policy");
    dir
}

/// Governance over `env`'s log with the default policy plus the test principals.
pub async fn governance(env: &Env) -> Governance {
    governance_with(env, GovernanceConfig::default()).await
}

/// Governance with `config`; without a policy directory it gets the default policy
/// plus the test principals.
pub async fn governance_with(env: &Env, mut config: GovernanceConfig) -> Governance {
    if config.policy_dir.is_none() {
        config.policy_dir = Some(test_policy_dir(env));
    }
    Governance::start(env.log.clone(), config)
        .await
        .expect("governance starts")
}

/// Governance over `env`'s log with the policy in `dir`.
pub async fn governance_in(env: &Env, dir: &std::path::Path) -> Governance {
    governance_with(
        env,
        GovernanceConfig {
            policy_dir: Some(dir.into()),
            ..Default::default()
        },
    )
    .await
}

fn ts() -> chrono::DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 15, 10, 30, 0)
        .single()
        .expect("valid time")
}

pub async fn register(log: &Arc<dyn EventLog>, alias: &str, parent: Option<&str>) {
    let e = VolkRegistered {
        alias: alias.into(),
        capabilities: vec!["code".into()],
        parent: parent.map(str::to_owned),
        protocols: vec!["cxp".into()],
        session_id: Some("s1".into()),
        metadata: Json(serde_json::json!({})),
    };
    log.append(&EventRecord::new("kernel", alias, e, ts()))
        .await
        .expect("append");
}

pub async fn spawn_junior(log: &Arc<dyn EventLog>, alias: &str, parent: &str) {
    let e = VolkSpawned {
        alias: alias.into(),
        parent: parent.into(),
        driver: "cli".into(),
        purpose: "task".into(),
        lifespan_ms: None,
    };
    log.append(&EventRecord::new("kernel", alias, e, ts()))
        .await
        .expect("append");
}

pub async fn open_session(log: &Arc<dyn EventLog>, id: &str) {
    let e = SessionOpened {
        session_id: id.into(),
        portfolio_id: "p1".into(),
        goals: vec![],
        opened_by: "U:Ox".into(),
    };
    log.append(&EventRecord::new("kernel", id, e, ts()))
        .await
        .expect("append");
}

pub fn packet(from: &str, to: &str, thread: &str, subject: &str, session: &str) -> Packet {
    Packet {
        message_id: Uuid::new_v4(),
        from_agent: from.into(),
        to_agent: to.into(),
        thread_id: thread.into(),
        subject: subject.into(),
        payload: PacketPayload::Json(serde_json::json!({"task": "x"}).into()),
        created_at: ts(),
        priority: 5,
        delivery_status: DeliveryStatus::Queued,
        work_status: WorkStatus::Pending,
        protocol_version: "1.0.0".into(),
        in_reply_to: None,
        metadata: Json(serde_json::json!({"session_id": session})),
    }
}

pub async fn send(log: &Arc<dyn EventLog>, p: Packet) -> Uuid {
    let id = p.message_id;
    let e = orchestrata_schemas::events::cxp_traffic::PacketSent { packet: p };
    log.append(&EventRecord::new("kernel", id.to_string(), e, ts()))
        .await
        .expect("append");
    id
}

/// A fresh sled log with U:Ox and U:Vz registered and `sends` task packets from U:Ox
/// to U:Vz in thread `t1`, session `s1`.
pub async fn ox_and_vz_with_sends(sends: usize) -> Env {
    let env = sled_env().await;
    register(&env.log, "U:Ox", None).await;
    register(&env.log, "U:Vz", None).await;
    for _ in 0..sends {
        send(&env.log, packet("U:Ox", "U:Vz", "t1", "task", "s1")).await;
    }
    env
}

/// A policy directory with one file.
pub fn policy_dir(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).expect("write policy");
    }
    dir
}

/// The default policy's files and the test principals (`clients.pl`), plus/overriding
/// `extra`.
pub fn default_policy_dir_with(extra: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for file in orchestrata::governance::Policy::default_policy().files() {
        std::fs::write(dir.path().join(&file.name), &file.text).expect("write policy");
    }
    std::fs::write(dir.path().join("clients.pl"), CLIENTS_PL).expect("write policy");
    for (name, text) in extra {
        std::fs::write(dir.path().join(name), text).expect("write policy");
    }
    dir
}

/// The `decision recorded` event at `sequence` of `governance.decisions`.
pub async fn recorded_decision(
    log: &Arc<dyn EventLog>,
    sequence: u64,
) -> orchestrata_schemas::events::governance::DecisionRecorded {
    use orchestrata_schemas::events::{Event, Stream};
    let events = log
        .read(Stream::GovernanceDecisions, sequence, Some(sequence), 1)
        .await
        .expect("read governance.decisions");
    match events.into_iter().next().map(|e| e.record.event) {
        Some(Event::DecisionRecorded(rec)) => rec,
        other => panic!("no decision at {sequence}: {other:?}"),
    }
}

/// `event` as the envelope at `sequence` of `cxp.traffic` (for folding views directly,
/// without a log).
pub fn envelope(
    sequence: u64,
    event: impl Into<orchestrata_schemas::events::Event>,
) -> orchestrata_schemas::events::Envelope {
    orchestrata_schemas::events::Envelope {
        stream: orchestrata_schemas::events::Stream::CxpTraffic,
        sequence,
        epoch: "test".into(),
        record: EventRecord::new("test", "k", event, Utc::now()),
    }
}

/// A packet from U:Ox to U:Vz in thread t1, session s1, sent under `id` at `sequence`.
pub fn sent(sequence: u64, id: Uuid) -> orchestrata_schemas::events::Envelope {
    let mut p = packet("U:Ox", "U:Vz", "t1", "task", "s1");
    p.message_id = id;
    envelope(
        sequence,
        orchestrata_schemas::events::cxp_traffic::PacketSent { packet: p },
    )
}

/// The packet `id` of [`sent`] delivered, at `sequence`.
pub fn delivered(sequence: u64, id: Uuid) -> orchestrata_schemas::events::Envelope {
    envelope(
        sequence,
        orchestrata_schemas::events::cxp_traffic::PacketDelivered {
            message_id: id,
            thread_id: "t1".into(),
            to_agent: "U:Vz".into(),
        },
    )
}
