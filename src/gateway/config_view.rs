//! [`GatewayConfig::view`]: the gateway's effective settings as JSON — one rendering for
//! `config.get` (through the gateway) and `orchestrata config print` (offline), so both
//! show every key. Secrets are never rendered: token values are printed as given and
//! redacted by the callers' key-name rule, the Redis password is cut from its URL, HMAC
//! secrets are counted and the Neo4j password is `<redacted>`.

use serde_json::{json, Value};

use super::config::GatewayConfig;

impl GatewayConfig {
    /// Every setting, with durations in `_ms` as the config file writes them.
    pub fn view(&self) -> Value {
        json!({
            "listen": self.listen.to_string(),
            "tokens": self.tokens.iter()
                .map(|t| json!({"token": t.token, "scope": t.scope.as_str(), "name": t.name}))
                .collect::<Vec<_>>(),
            "max_clients": self.max_clients,
            "max_pending_auth": self.max_pending_auth,
            "max_pending_auth_per_peer": self.max_pending_auth_per_peer,
            "max_connections_per_principal": self.max_connections_per_principal,
            "max_message_size_bytes": self.max_message_size_bytes,
            "max_batch": self.max_batch,
            "auth_grace_ms": self.auth_grace.as_millis() as u64,
            "max_subscriptions_per_client": self.max_subscriptions_per_client,
            "event_buffer_per_client": self.event_buffer_per_client,
            "rate_limit_per_second": self.rate_limit_per_second,
            "max_in_flight_per_connection": self.max_in_flight_per_connection,
            "heartbeat_interval_ms": self.heartbeat_interval.as_millis() as u64,
            "heartbeat_max_misses": self.heartbeat_max_misses,
            "heartbeat_timeout_ms": self.heartbeat_timeout.as_millis() as u64,
            "read_your_write_timeout_ms": self.read_your_write_timeout.as_millis() as u64,
            "max_replay_scan": self.max_replay_scan,
            "redis_url": self.redis_url.as_deref().map(super::shared::redacted_url),
            "instance_id": self.instance_id,
            "auth_cache_ttl_ms": self.auth_cache_ttl.as_millis() as u64,
            "hmac": self.hmac.as_ref().map(|h| json!({
                "secrets": h.secrets.len(),
                "clients": h.clients,
                "drift_window_ms": h.drift_window.as_millis() as u64,
            })),
            "neo4j": self.neo4j.as_ref().map(|n| json!({
                "uri": n.uri, "user": n.user, "password": "<redacted>",
            })),
            "knowledge_timeout_ms": self.knowledge_timeout.as_millis() as u64,
            "knowledge_max_results": self.knowledge_max_results,
            "allowed_origins": self.allowed_origins,
            "tls": self.tls.as_ref().map(|t| json!({
                "cert_path": t.cert_path.display().to_string(),
                "key_path": t.key_path.display().to_string(),
            })),
        })
    }
}
