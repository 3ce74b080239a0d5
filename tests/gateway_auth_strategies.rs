//! Authentication strategies of the gateway (spec 014 US-006): `hmac` and
//! `prolog_policy`, over a real WebSocket, a real sled log and the real governance
//! engine. Every denial must name its reason and be on the log.

mod support;

use std::sync::Arc;

use chrono::Utc;
use orchestrata::config::LogConfig;
use orchestrata::gateway::auth_hmac::sign;
use orchestrata::gateway::config::HmacConfig;
use orchestrata::gateway::{self, GatewayConfig, Scope, Services};
use orchestrata::governance::{Governance, GovernanceConfig, Policy};
use orchestrata::log::EventLog;
use orchestrata_schemas::events::Stream;
use serde_json::{json, Value};
use support::ws::{self, Backend, TestGateway, Ws};

const SECRET: &str = "hmac-secret-current";
const OLD_SECRET: &str = "hmac-secret-previous";

fn hmac_config() -> GatewayConfig {
    ws::test_config()
        .with_hmac(
            HmacConfig::new([SECRET, OLD_SECRET])
                .with_client("billing-bot", Scope::ReadWrite)
                .with_client("viewer-bot", Scope::ReadOnly),
        )
        .expect("valid hmac settings")
}

/// A gateway over a fresh sled log, optionally with governance.
async fn start(config: GatewayConfig, with_governance: bool) -> (TestGateway, Option<Governance>) {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = orchestrata::log::open(&LogConfig::sled(dir.path()))
        .await
        .expect("open sled log");
    let mut services = Services::new(log.clone());
    let mut config = config;
    // These tests exercise `prolog_policy`, which a site turns on and whose policy
    // registers its clients (the shipped one registers none).
    config.prolog_policy = true;
    let governance = if with_governance {
        let g = Governance::start(log.clone(), GovernanceConfig::default())
            .await
            .expect("governance starts");
        g.load_policy(policy_with_clients(""))
            .await
            .expect("test policy loads");
        services = services.with_governance(g.clone());
        Some(g)
    } else {
        None
    };
    let running = gateway::start(config, services)
        .await
        .expect("gateway starts");
    let gw = TestGateway {
        running: Some(running),
        log,
        backend: Backend::Sled(dir),
    };
    (gw, governance)
}

/// The default policy plus the test principals and `extra` clauses.
fn policy_with_clients(extra: &str) -> Policy {
    support::policy::edited(|files| {
        if let Some(clients) = files.last_mut() {
            // `extra` first: clauses it adds to the fixture's predicates stay contiguous.
            clients.text = format!("{extra}\n{}", clients.text);
        }
    })
}

fn hmac_params(secret: &str, client_id: &str, nonce: &str, at: chrono::DateTime<Utc>) -> Value {
    let ts = at.to_rfc3339();
    json!({
        "strategy": "hmac",
        "client_id": client_id,
        "timestamp": ts,
        "nonce": nonce,
        "signature": sign(secret, &ts, nonce, client_id),
    })
}

fn reason(e: &Value) -> &str {
    e["data"]["reason"].as_str().unwrap_or("")
}

fn fresh_nonce() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

async fn decisions(log: &Arc<dyn EventLog>) -> Vec<Value> {
    log.read(Stream::GovernanceDecisions, 0, None, 10_000)
        .await
        .expect("read decisions")
        .iter()
        .map(|e| serde_json::to_value(e).expect("json"))
        .collect()
}

// REQ-014-096 REQ-014-100 REQ-014-086
#[tokio::test]
async fn a_correct_hmac_signature_authenticates_with_the_mapped_scope() {
    let (gw, _) = start(hmac_config(), false).await;
    let mut c = gw.connect().await;
    let r = c
        .ok(
            "auth.authenticate",
            hmac_params(SECRET, "billing-bot", &fresh_nonce(), Utc::now()),
        )
        .await;
    assert_eq!(r["authenticated"], true);
    assert_eq!(r["scope"], "read_write");
    assert_eq!(r["identity"], "billing-bot");
    c.ok("gateway.ping", json!({})).await;
    let mut v = gw.connect().await;
    let r = v
        .ok(
            "auth.authenticate",
            hmac_params(SECRET, "viewer-bot", &fresh_nonce(), Utc::now()),
        )
        .await;
    assert_eq!(r["scope"], "read_only", "scope comes from the client map");
    let e = v.err("cxp.send", json!({})).await;
    assert_eq!(reason(&e), "insufficient_scope");
}

// REQ-014-096 REQ-014-ERR-002 REQ-014-090: failed and successful authentications are both
// on the log (deny decisions; `connected` by the principal).
#[tokio::test]
async fn a_wrong_signature_is_refused_and_audited_without_the_secret() {
    let (gw, _) = start(hmac_config(), false).await;
    let mut c = gw.connect().await;
    let e = c
        .err(
            "auth.authenticate",
            hmac_params("not-the-secret", "billing-bot", &fresh_nonce(), Utc::now()),
        )
        .await;
    assert_eq!(e["code"], -32001);
    assert_eq!(reason(&e), "invalid_signature");
    // A signature over other fields (here: another client id) does not verify either.
    let mut p = hmac_params(SECRET, "billing-bot", &fresh_nonce(), Utc::now());
    p["client_id"] = json!("viewer-bot");
    assert_eq!(
        reason(&c.err("auth.authenticate", p).await),
        "invalid_signature"
    );
    // Unknown client with a valid signature.
    let e = c
        .err(
            "auth.authenticate",
            hmac_params(SECRET, "stranger", &fresh_nonce(), Utc::now()),
        )
        .await;
    assert_eq!(reason(&e), "unknown_client");
    let e = c.err("gateway.ping", json!({})).await;
    assert_eq!(
        reason(&e),
        "authentication_required",
        "still unauthenticated"
    );
    let recorded = decisions(&gw.log).await;
    let denials: Vec<&Value> = recorded
        .iter()
        .filter(|d| d["payload"]["action"] == "auth.authenticate")
        .collect();
    assert_eq!(denials.len(), 3, "{recorded:?}");
    assert_eq!(denials[0]["payload"]["result"], "deny");
    assert_eq!(denials[0]["payload"]["reason"], "invalid_signature");
    let text = serde_json::to_string(&recorded).expect("json");
    assert!(
        !text.contains(SECRET) && !text.contains(OLD_SECRET),
        "no secret on the log"
    );
    // A successful authentication is on the log too: `connected` on gateway.presence,
    // by the authenticated principal, with the scope it was granted.
    let ok = c
        .ok(
            "auth.authenticate",
            hmac_params(SECRET, "billing-bot", &fresh_nonce(), Utc::now()),
        )
        .await;
    let presence: Vec<Value> = gw
        .log
        .read(Stream::GatewayPresence, 0, None, 10_000)
        .await
        .expect("read presence")
        .iter()
        .map(|e| serde_json::to_value(e).expect("json"))
        .collect();
    let connected: Vec<&Value> = presence
        .iter()
        .filter(|e| e["payload"]["client_id"] == ok["client_id"])
        .collect();
    assert_eq!(connected.len(), 1, "{presence:?}");
    assert_eq!(connected[0]["event_type"], "connected", "{presence:?}");
    assert_eq!(connected[0]["principal"], "billing-bot", "{presence:?}");
    assert_eq!(connected[0]["payload"]["auth_scope"], "read_write");
    let text = serde_json::to_string(&presence).expect("json");
    assert!(!text.contains(SECRET), "no secret on the log");
}

// REQ-014-097
#[tokio::test]
async fn timestamps_outside_the_drift_window_are_refused() {
    let (gw, _) = start(hmac_config(), false).await;
    let mut c = gw.connect().await;
    for offset in [-120i64, 120] {
        let at = Utc::now() + chrono::Duration::seconds(offset);
        let e = c
            .err(
                "auth.authenticate",
                hmac_params(SECRET, "billing-bot", &fresh_nonce(), at),
            )
            .await;
        assert_eq!(reason(&e), "timestamp_drift", "offset {offset}: {e}");
        assert_eq!(e["data"]["drift_window_ms"], 60_000);
    }
    let at = Utc::now() - chrono::Duration::seconds(30);
    c.ok(
        "auth.authenticate",
        hmac_params(SECRET, "billing-bot", &fresh_nonce(), at),
    )
    .await;
}

// REQ-014-098 REQ-014-ERR-013
#[tokio::test]
async fn a_nonce_is_accepted_once_and_replayed_nonces_are_refused() {
    let (gw, _) = start(hmac_config(), false).await;
    let nonce = fresh_nonce();
    let params = hmac_params(SECRET, "billing-bot", &nonce, Utc::now());
    let mut first = gw.connect().await;
    first.ok("auth.authenticate", params.clone()).await;
    // The same signed request from another connection: a replay.
    let mut second = gw.connect().await;
    let e = second.err("auth.authenticate", params).await;
    assert_eq!(e["code"], -32001);
    assert_eq!(reason(&e), "nonce_replay");
    // Another client using the same nonce within the window is refused as well.
    let e = second
        .err(
            "auth.authenticate",
            hmac_params(SECRET, "viewer-bot", &nonce, Utc::now()),
        )
        .await;
    assert_eq!(reason(&e), "nonce_replay");
    // A forged request must not burn a nonce: a bad signature leaves it unclaimed.
    let spare = fresh_nonce();
    second
        .err(
            "auth.authenticate",
            hmac_params("forged", "billing-bot", &spare, Utc::now()),
        )
        .await;
    second
        .ok(
            "auth.authenticate",
            hmac_params(SECRET, "billing-bot", &spare, Utc::now()),
        )
        .await;
}

// REQ-014-099
#[tokio::test]
async fn every_configured_secret_is_accepted_during_rotation_and_retired_ones_are_not() {
    let (gw, _) = start(hmac_config(), false).await;
    for secret in [SECRET, OLD_SECRET] {
        let mut c = gw.connect().await;
        c.ok(
            "auth.authenticate",
            hmac_params(secret, "billing-bot", &fresh_nonce(), Utc::now()),
        )
        .await;
    }
    // After rotation completes the old secret is dropped from the config.
    let rotated = ws::test_config()
        .with_hmac(HmacConfig::new([SECRET]).with_client("billing-bot", Scope::ReadWrite))
        .expect("valid");
    let (gw2, _) = start(rotated, false).await;
    let mut c = gw2.connect().await;
    let e = c
        .err(
            "auth.authenticate",
            hmac_params(OLD_SECRET, "billing-bot", &fresh_nonce(), Utc::now()),
        )
        .await;
    assert_eq!(reason(&e), "invalid_signature");
}

// REQ-014-ERR-002
#[tokio::test]
async fn hmac_is_refused_when_not_configured_and_missing_fields_are_named() {
    let (gw, _) = start(ws::test_config(), false).await;
    let mut c = gw.connect().await;
    let e = c
        .err(
            "auth.authenticate",
            hmac_params(SECRET, "billing-bot", &fresh_nonce(), Utc::now()),
        )
        .await;
    assert_eq!(reason(&e), "unsupported_strategy");
    let (gw, _) = start(hmac_config(), false).await;
    let mut c = gw.connect().await;
    let e = c
        .err(
            "auth.authenticate",
            json!({"strategy": "hmac", "client_id": "billing-bot", "nonce": "n"}),
        )
        .await;
    assert_eq!(reason(&e), "missing_field");
    assert_eq!(e["data"]["field"], "timestamp");
}

// REQ-014-097 REQ-014-099 REQ-014-100
#[tokio::test]
async fn hmac_settings_without_secrets_are_a_config_error_naming_the_field() {
    let err =
        GatewayConfig::from_yaml("gateway:\n  hmac:\n    secrets: []\n").expect_err("no secrets");
    assert!(err.to_string().contains("gateway.hmac.secrets"), "{err}");
    let ok = GatewayConfig::from_yaml(
        "gateway:\n  hmac:\n    secrets: [a, b]\n    clients: {bot: admin}\n    drift_window_ms: 5000\n",
    )
    .expect("valid");
    let h = ok.hmac.expect("hmac enabled");
    assert_eq!(h.clients.get("bot").map(|c| c.scope), Some(Scope::Admin));
    assert_eq!(h.drift_window.as_millis(), 5000);
    assert!(
        !format!("{h:?}").contains("a, b"),
        "secrets are redacted in Debug"
    );
}

// REQ-014-101 REQ-014-102
#[tokio::test]
async fn prolog_policy_grants_the_scope_gateway_access_allows() {
    let (gw, _) = start(ws::test_config(), true).await;
    for (client, scope) in [
        ("ops-admin", "admin"),
        ("operator", "read_write"),
        ("dashboard", "read_only"),
    ] {
        let mut c = gw.connect().await;
        let r = c
            .ok(
                "auth.authenticate",
                json!({"strategy": "prolog_policy", "client_id": client}),
            )
            .await;
        assert_eq!(r["scope"], scope, "{client}");
        if scope == "read_only" {
            let e = c.err("cxp.send", json!({})).await;
            assert_eq!(reason(&e), "insufficient_scope", "scope is enforced");
        }
    }
    let asked: Vec<Value> = decisions(&gw.log)
        .await
        .into_iter()
        .filter(|d| d["payload"]["action"] == "gateway.access")
        .collect();
    assert!(
        asked.iter().any(|d| d["payload"]["subject"] == "ops-admin"
            && d["payload"]["resource"] == "admin"
            && d["payload"]["result"] == "allow"),
        "decisions are on the log: {asked:?}"
    );
}

// REQ-014-105 REQ-014-ERR-002
#[tokio::test]
async fn a_prolog_policy_denial_carries_the_evaluations_reason() {
    let (gw, _) = start(ws::test_config(), true).await;
    for client in ["stranger", "suspended-operator"] {
        let mut c = gw.connect().await;
        let e = c
            .err(
                "auth.authenticate",
                json!({"strategy": "prolog_policy", "client_id": client}),
            )
            .await;
        assert_eq!(e["code"], -32001);
        assert_eq!(reason(&e), "policy_denied", "{client}");
        let detail = e["data"]["detail"].as_str().unwrap_or("");
        assert!(
            detail.contains("gateway_access") && detail.contains("not_permitted"),
            "{client}: {detail}"
        );
    }
    let mut c = gw.connect().await;
    let e = c
        .err("auth.authenticate", json!({"strategy": "prolog_policy"}))
        .await;
    assert_eq!(
        (reason(&e), &e["data"]["field"]),
        ("missing_field", &json!("client_id"))
    );
}

// REQ-014-101 REQ-014-ERR-009
#[tokio::test]
async fn prolog_policy_without_governance_fails_closed() {
    let (gw, _) = start(ws::test_config(), false).await;
    let mut c = gw.connect().await;
    let e = c
        .err(
            "auth.authenticate",
            json!({"strategy": "prolog_policy", "client_id": "ops-admin"}),
        )
        .await;
    assert_eq!(reason(&e), "governance_unavailable");
}

// REQ-014-103 REQ-014-104
#[tokio::test]
async fn policy_decisions_are_cached_until_the_policy_is_reloaded() {
    let (gw, governance) = start(ws::test_config(), true).await;
    let governance = governance.expect("governance");
    let auth = json!({"strategy": "prolog_policy", "client_id": "stranger"});
    let count = |v: &[Value]| {
        v.iter()
            .filter(|d| d["payload"]["action"] == "gateway.access")
            .count()
    };
    let mut c = gw.connect().await;
    assert_eq!(
        reason(&c.err("auth.authenticate", auth.clone()).await),
        "policy_denied"
    );
    let asked = count(&decisions(&gw.log).await);
    assert!(asked >= 1);
    // Asked again: answered from the cache, governance is not consulted.
    assert_eq!(
        reason(&c.err("auth.authenticate", auth.clone()).await),
        "policy_denied"
    );
    assert_eq!(
        count(&decisions(&gw.log).await),
        asked,
        "served from the cache"
    );
    // A new policy makes `stranger` an admin: the cached denial must not survive it.
    governance
        .load_policy(policy_with_clients("registered_admin('stranger')."))
        .await
        .expect("policy loads");
    let r = c.ok("auth.authenticate", auth).await;
    assert_eq!(r["scope"], "admin");
    assert!(count(&decisions(&gw.log).await) > asked, "re-evaluated");
}

// REQ-014-094
#[tokio::test]
async fn tokens_added_to_the_store_authenticate_until_revoked() {
    let (gw, _) = start(ws::test_config(), false).await;
    let state = gw
        .running
        .as_ref()
        .expect("running")
        .shared()
        .services
        .shared_state
        .clone();
    let mut c = gw.connect().await;
    let e = c
        .err(
            "auth.authenticate",
            json!({"strategy": "static_token", "token": "rotated-token"}),
        )
        .await;
    assert_eq!(reason(&e), "invalid_token");
    state
        .put_token(
            "rotated-token",
            orchestrata::gateway::shared::StoredGrant {
                scope: Scope::Admin,
                name: Some("ops-rotated".into()),
            },
        )
        .await
        .expect("stored");
    let r = c
        .ok(
            "auth.authenticate",
            json!({"strategy": "static_token", "token": "rotated-token"}),
        )
        .await;
    assert_eq!(r["scope"], "admin");
    assert!(state.revoke_token("rotated-token").await.expect("revoked"));
    let mut d: Ws = gw.connect().await;
    let e = d
        .err(
            "auth.authenticate",
            json!({"strategy": "static_token", "token": "rotated-token"}),
        )
        .await;
    assert_eq!(reason(&e), "invalid_token");
}
