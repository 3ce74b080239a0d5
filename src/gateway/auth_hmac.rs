//! The `hmac` strategy: a client proves it holds a shared secret without sending it.
//!
//! The client sends `{strategy: "hmac", client_id, timestamp, nonce, signature}` where
//! `signature = hex(HMAC-SHA256(secret, timestamp + nonce + client_id))` — the three
//! strings concatenated exactly as sent (REQ-014-096). The gateway accepts when:
//!
//! 1. the client id is listed in `gateway.hmac.clients` (REQ-014-100) — else
//!    `unknown_client`;
//! 2. the signature matches under one of *that client's* secrets (its own
//!    `clients.<id>.secrets`, or the shared `gateway.hmac.secrets` for a client listed
//!    without secrets — see [`HmacConfig::secrets_of`]); several during a rotation,
//!    REQ-014-099; each is checked in constant time and all are checked, so timing does
//!    not tell which one matched — else `invalid_signature`. A secret of another client
//!    never verifies: a read_only client cannot sign as an admin one;
//! 3. the timestamp is within `drift_window` (60 s) of the server clock
//!    (REQ-014-097) — else `timestamp_drift`;
//! 4. the nonce was not used before within the window, on any instance sharing state
//!    (REQ-014-098, ERR-013) — else `nonce_replay`. Nonces are remembered for twice the
//!    window: a timestamp up to one window in the future stays acceptable that long.
//!
//! [`verify`] does 1–3 without I/O; the handler claims the nonce afterwards, so a
//! forged request cannot burn a legitimate client's nonce.

use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;

use super::auth::Scope;
use super::config::HmacConfig;
use super::error::{ErrorCode, RpcError};

/// Longest accepted nonce.
pub const MAX_NONCE_LEN: usize = 256;

/// A request whose signature, timestamp and client id checked out; its nonce is still
/// to be claimed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The client id it signed.
    pub client_id: String,
    /// Its scope from `gateway.hmac.clients`.
    pub scope: Scope,
    /// The nonce to claim.
    pub nonce: String,
    /// The Volk aliases the client may act as (`clients.<id>.acts_as`).
    pub acts_as: Vec<String>,
    /// The Volk a `cxp.send` without `from` sends as (`clients.<id>.default_volk`).
    pub default_volk: Option<String>,
}

fn deny(reason: &str, detail: impl Into<String>) -> RpcError {
    RpcError::new(ErrorCode::Unauthorized, reason).with("detail", detail.into())
}

fn field<'p>(params: &'p Value, name: &str) -> Result<&'p str, RpcError> {
    match params.get(name).and_then(Value::as_str) {
        Some(v) if !v.is_empty() => Ok(v),
        _ => Err(deny(
            "missing_field",
            format!("field `{name}` is required for hmac and must be a non-empty string"),
        )
        .with("field", name)),
    }
}

/// Parses an RFC 3339 timestamp (the contract's `date-time`) or integer Unix seconds.
fn parse_timestamp(text: &str) -> Result<DateTime<Utc>, RpcError> {
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Ok(t.with_timezone(&Utc));
    }
    text.parse::<i64>()
        .ok()
        .and_then(|s| DateTime::from_timestamp(s, 0))
        .ok_or_else(|| {
            deny(
                "invalid_timestamp",
                "field `timestamp` must be RFC 3339 (e.g. 2026-03-27T14:30:22Z) or Unix seconds",
            )
            .with("field", "timestamp")
        })
}

/// The hex signature of `timestamp + nonce + client_id` under `secret` (what a client
/// computes).
pub fn sign(secret: &str, timestamp: &str, nonce: &str, client_id: &str) -> String {
    mac(secret, timestamp, nonce, client_id)
        .map(|m| hex::encode(m.finalize().into_bytes()))
        .unwrap_or_default()
}

/// The MAC state over the signed text (`None` only if the key were refused, which
/// HMAC never does: it accepts keys of any length).
fn mac(secret: &str, timestamp: &str, nonce: &str, client_id: &str) -> Option<Hmac<Sha256>> {
    let mut m = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).ok()?;
    m.update(timestamp.as_bytes());
    m.update(nonce.as_bytes());
    m.update(client_id.as_bytes());
    Some(m)
}

/// Checks signature, drift and client id of `params` at time `now` (no I/O).
pub fn verify(cfg: &HmacConfig, params: &Value, now: DateTime<Utc>) -> Result<Verified, RpcError> {
    let client_id = field(params, "client_id")?;
    let timestamp = field(params, "timestamp")?;
    let nonce = field(params, "nonce")?;
    let signature = field(params, "signature")?;
    if nonce.len() > MAX_NONCE_LEN {
        return Err(deny(
            "invalid_nonce",
            format!(
                "field `nonce` is {} bytes, at most {MAX_NONCE_LEN}",
                nonce.len()
            ),
        )
        .with("field", "nonce"));
    }
    let sent = parse_timestamp(timestamp)?;
    let given = hex::decode(signature).map_err(|_| {
        deny(
            "invalid_signature",
            "field `signature` must be the hex HMAC-SHA256 of timestamp + nonce + client_id",
        )
        .with("field", "signature")
    })?;
    let client = cfg.clients.get(client_id).ok_or_else(|| {
        deny(
            "unknown_client",
            format!("client id `{client_id}` is not listed in gateway.hmac.clients"),
        )
    })?;
    let mut matched = false;
    for secret in cfg.secrets_of(client) {
        // verify_slice compares in constant time; no early exit across secrets.
        if let Some(m) = mac(secret, timestamp, nonce, client_id) {
            matched |= m.verify_slice(&given).is_ok();
        }
    }
    if !matched {
        return Err(deny(
            "invalid_signature",
            format!("the signature does not match under any secret of client `{client_id}`"),
        ));
    }
    let drift = (now - sent).abs();
    let window = chrono::Duration::from_std(cfg.drift_window).unwrap_or(chrono::Duration::MAX);
    if drift > window {
        return Err(deny(
            "timestamp_drift",
            format!(
                "timestamp is {} s from the server clock; at most {} s accepted",
                drift.num_seconds(),
                window.num_seconds()
            ),
        )
        .with(
            "drift_window_ms",
            u64::try_from(cfg.drift_window.as_millis()).unwrap_or(u64::MAX),
        ));
    }
    Ok(Verified {
        client_id: client_id.to_owned(),
        scope: client.scope,
        nonce: nonce.to_owned(),
        acts_as: client.acts_as.clone(),
        default_volk: client.default_volk.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Duration;

    fn cfg() -> HmacConfig {
        HmacConfig::new(["new-secret", "old-secret"]).with_client("bot", Scope::ReadWrite)
    }

    fn params(secret: &str, ts: &str, nonce: &str, id: &str) -> Value {
        json!({"strategy": "hmac", "client_id": id, "timestamp": ts, "nonce": nonce,
               "signature": sign(secret, ts, nonce, id)})
    }

    // REQ-014-096 REQ-014-099 REQ-014-100
    #[test]
    fn any_configured_secret_verifies_and_the_scope_comes_from_the_map() {
        let now = Utc::now();
        let ts = now.to_rfc3339();
        for secret in ["new-secret", "old-secret"] {
            let v = verify(&cfg(), &params(secret, &ts, "n-1", "bot"), now).expect("valid");
            assert_eq!(v.scope, Scope::ReadWrite);
            assert_eq!(v.nonce, "n-1");
        }
        let e = verify(&cfg(), &params("retired", &ts, "n-1", "bot"), now).expect_err("bad");
        assert_eq!(e.reason, "invalid_signature");
    }

    fn per_client() -> HmacConfig {
        use crate::gateway::config::HmacClient;
        HmacConfig::new(Vec::<String>::new())
            .with_hmac_client(
                "viewer",
                HmacClient::new(Scope::ReadOnly).with_secrets(["viewer-secret"]),
            )
            .with_hmac_client(
                "ops",
                HmacClient::new(Scope::Admin)
                    .with_secrets(["ops-new", "ops-old"])
                    .acting_as(["U:Cx"]),
            )
    }

    // REQ-014-096 REQ-014-100 ISSUE-14: cross-client HMAC signing
    #[test]
    fn a_clients_secret_verifies_only_that_client() {
        let now = Utc::now();
        let ts = now.to_rfc3339();
        let c = per_client();
        let v = verify(&c, &params("viewer-secret", &ts, "n", "viewer"), now).expect("own");
        assert_eq!(v.scope, Scope::ReadOnly);
        let e = verify(&c, &params("viewer-secret", &ts, "n", "ops"), now).expect_err("cross");
        assert_eq!(e.reason, "invalid_signature");
        let e = verify(&c, &params("ops-new", &ts, "n", "viewer"), now).expect_err("cross");
        assert_eq!(e.reason, "invalid_signature");
        // REQ-014-099: every secret of the client (rotation) verifies it.
        for secret in ["ops-new", "ops-old"] {
            let v = verify(&c, &params(secret, &ts, "n", "ops"), now).expect("rotation");
            assert_eq!(
                (v.scope, v.acts_as.clone(), v.default_volk.clone()),
                (
                    Scope::Admin,
                    vec!["U:Cx".to_owned()],
                    Some("U:Cx".to_owned())
                )
            );
        }
        let e = verify(&c, &params("viewer-secret", &ts, "n", "nobody"), now).expect_err("id");
        assert_eq!(e.reason, "unknown_client");
        assert!(c.shared_secret_warning().is_none());
        assert!(cfg()
            .shared_secret_warning()
            .is_some_and(|w| w.contains("bot")));
    }

    // REQ-014-097
    #[test]
    fn timestamps_outside_the_window_are_refused_either_side() {
        let now = Utc::now();
        let mut c = cfg();
        c.drift_window = Duration::from_secs(60);
        for offset in [-61i64, 61] {
            let ts = (now + chrono::Duration::seconds(offset)).to_rfc3339();
            let e = verify(&c, &params("new-secret", &ts, "n", "bot"), now).expect_err("drift");
            assert_eq!(e.reason, "timestamp_drift", "{offset}");
        }
        let ts = (now - chrono::Duration::seconds(59))
            .timestamp()
            .to_string();
        assert!(verify(&c, &params("new-secret", &ts, "n", "bot"), now).is_ok());
    }

    // REQ-014-ERR-002
    #[test]
    fn malformed_fields_name_the_field() {
        let now = Utc::now();
        let ts = now.to_rfc3339();
        let mut p = params("new-secret", &ts, "n", "bot");
        p["signature"] = json!("zz-not-hex");
        assert_eq!(
            verify(&cfg(), &p, now).expect_err("hex").reason,
            "invalid_signature"
        );
        let p = params("new-secret", "yesterday", "n", "bot");
        let e = verify(&cfg(), &p, now).expect_err("ts");
        assert_eq!(e.reason, "invalid_timestamp");
        let mut p = params("new-secret", &ts, "n", "bot");
        p.as_object_mut().expect("object").remove("nonce");
        let e = verify(&cfg(), &p, now).expect_err("nonce");
        assert_eq!(
            (e.reason.as_str(), &e.extra["field"]),
            ("missing_field", &json!("nonce"))
        );
        let e =
            verify(&cfg(), &params("new-secret", &ts, "n", "stranger"), now).expect_err("unknown");
        assert_eq!(e.reason, "unknown_client");
    }
}
