//! Gateway settings: the `gateway:` section of the YAML config, then flags and env.
//!
//! ```yaml
//! gateway:
//!   listen: 127.0.0.1:18790        # 0.0.0.0:18790 in the container config
//!   static_token: «secret»          # or GATEWAY_TOKEN; scope read_write
//!   tokens:                         # more grants, e.g. an admin token
//!     - { token: «secret», scope: admin, name: ops }
//!   max_clients: 100
//!   max_message_size_bytes: 1048576
//!   max_batch: 50
//!   auth_grace_ms: 5000
//!   max_subscriptions_per_client: 50
//!   event_buffer_per_client: 1000
//!   rate_limit_per_second: 500
//!   heartbeat_interval_ms: 30000
//!   heartbeat_max_misses: 3
//!   heartbeat_timeout_ms: 10000     # a ping unanswered this long is a miss
//!   read_your_write_timeout_ms: 2000
//!   redis_url: redis://127.0.0.1:6379  # or ORCHESTRATA_GATEWAY__REDIS_URL, `up --redis`
//!   instance_id: gw-a               # default: random gw-xxxxxxxx
//!   auth_cache_ttl_ms: 300000       # prolog_policy decisions
//!   hmac:                           # enables the hmac strategy
//!     secrets: [«new», «old»]       # several during rotation
//!     clients: { billing-bot: read_write }
//!     drift_window_ms: 60000
//!   neo4j:                          # enables knowledge.query (and the graph sink)
//!     uri: neo4j://127.0.0.1:7687   # or ORCHESTRATA_GATEWAY__NEO4J__URI
//!     user: neo4j                   # ORCHESTRATA_GATEWAY__NEO4J__USER
//!     password: «secret»            # ORCHESTRATA_GATEWAY__NEO4J__PASSWORD; redacted
//!   knowledge_timeout_ms: 10000     # knowledge.query default timeout
//!   knowledge_max_results: 1000     # knowledge.query default cap on records
//!   allowed_origins: [https://ops.example.com]  # browser pages; `*`: any (see `origin`)
//!   tls: { cert_path: gw.crt, key_path: gw.key } # PEM; serves wss:// (see `tls`)
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use super::auth::{Scope, TokenGrant};

/// Default listen address of `orchestrata up`.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:18790";

/// Everything the gateway needs besides the components it serves.
#[derive(Debug, Clone)]
pub struct GatewayConfig {
    /// Where to listen (port 0 picks a free port; see `RunningGateway::local_addr`).
    pub listen: SocketAddr,
    /// Accepted static tokens. The first is the `static_token` (scope read_write by
    /// default); more grants can carry other scopes.
    pub tokens: Vec<TokenGrant>,
    /// Connections beyond this are closed with 1013 (Try Again Later).
    pub max_clients: usize,
    /// Text frames longer than this close the connection with 1009.
    pub max_message_size_bytes: usize,
    /// Longest accepted batch; longer ones answer -32600 `batch_too_large`.
    pub max_batch: usize,
    /// Unauthenticated connections are closed after this long.
    pub auth_grace: Duration,
    /// Live subscriptions one client may hold.
    pub max_subscriptions_per_client: usize,
    /// Events a client's outbound queue holds. When it is full the oldest queued event
    /// is evicted and the client later gets a `gateway.gap` notice naming what it
    /// missed (see `gateway::outbox`); the client is not disconnected.
    pub event_buffer_per_client: usize,
    /// Requests per second per client before -32002.
    pub rate_limit_per_second: u32,
    /// Server pings every this long.
    pub heartbeat_interval: Duration,
    /// Consecutive unanswered pings before the client is dropped (`timeout`).
    pub heartbeat_max_misses: u32,
    /// How long a ping may go unanswered before it counts as missed (capped at
    /// `heartbeat_interval`). Any frame from the client counts as an answer.
    pub heartbeat_timeout: Duration,
    /// Redis shared by several gateway instances (nonces, auth cache, token store,
    /// client registry); `None` keeps that state in memory.
    pub redis_url: Option<String>,
    /// This instance's id in the shared client registry.
    pub instance_id: String,
    /// How long a `prolog_policy` decision is cached.
    pub auth_cache_ttl: Duration,
    /// The `hmac` strategy; `None` leaves it disabled.
    pub hmac: Option<HmacConfig>,
    /// How long a read after a write waits for the views to catch up.
    pub read_your_write_timeout: Duration,
    /// Largest number of events `gateway.replay` scans for a time or filtered query.
    pub max_replay_scan: u64,
    /// Neo4j for `knowledge.query`; `None`: that method answers -32603
    /// `neo4j_unavailable` (the graph view still serves `knowledge.nodes/relationships`).
    pub neo4j: Option<crate::projection::neo4j::Neo4jConfig>,
    /// How long a `knowledge.query` may run when the call gives no `timeout_seconds`.
    pub knowledge_timeout: Duration,
    /// Records a `knowledge.query` returns at most when the call gives no `max_results`.
    pub knowledge_max_results: usize,
    /// Browser origins (`https://host[:port]`, or `*`) allowed to open a WebSocket
    /// besides the gateway's own; clients sending no `Origin` are always allowed.
    pub allowed_origins: Vec<String>,
    /// Certificate and key for `wss://`/`https://`; `None` serves plain `ws://`.
    pub tls: Option<super::tls::TlsConfig>,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 18790)),
            tokens: Vec::new(),
            max_clients: 100,
            max_message_size_bytes: 1_048_576,
            max_batch: 50,
            auth_grace: Duration::from_secs(5),
            max_subscriptions_per_client: 50,
            event_buffer_per_client: 1000,
            rate_limit_per_second: 500,
            heartbeat_interval: Duration::from_secs(30),
            heartbeat_max_misses: 3,
            heartbeat_timeout: Duration::from_secs(10),
            redis_url: None,
            instance_id: super::shared::new_instance_id(),
            auth_cache_ttl: Duration::from_secs(300),
            hmac: None,
            read_your_write_timeout: Duration::from_secs(2),
            max_replay_scan: 100_000,
            neo4j: None,
            knowledge_timeout: Duration::from_secs(10),
            knowledge_max_results: 1000,
            allowed_origins: Vec::new(),
            tls: None,
        }
    }
}

/// Why the gateway configuration is unusable.
#[derive(Debug, thiserror::Error)]
pub enum GatewayConfigError {
    /// The file could not be read or parsed.
    #[error("config file {path}: {reason}")]
    File {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// A value is out of range.
    #[error("config field {field}: {reason}")]
    Invalid {
        /// E.g. `gateway.max_clients`.
        field: String,
        /// Why.
        reason: String,
    },
}

/// Settings of the `hmac` strategy: the client signs
/// `timestamp + nonce + client_id` with HMAC-SHA256 under one of `secrets`.
#[derive(Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HmacConfig {
    /// Accepted secrets; during a rotation both the new and the old one.
    pub secrets: Vec<String>,
    /// Which scope each client id gets. A client id not listed is refused.
    #[serde(default)]
    pub clients: BTreeMap<String, Scope>,
    /// Largest accepted difference between the client's timestamp and the server clock;
    /// nonces are remembered this long.
    #[serde(default = "default_drift", rename = "drift_window_ms", with = "millis")]
    pub drift_window: Duration,
}

fn default_drift() -> Duration {
    Duration::from_secs(60)
}

mod millis {
    use serde::{Deserialize, Deserializer};
    use std::time::Duration;
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}

impl fmt::Debug for HmacConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HmacConfig")
            .field("secrets", &format!("<{} redacted>", self.secrets.len()))
            .field("clients", &self.clients)
            .field("drift_window", &self.drift_window)
            .finish()
    }
}

impl HmacConfig {
    /// Secrets `secrets`, no clients, the default 60 s drift window.
    pub fn new<S: Into<String>>(secrets: impl IntoIterator<Item = S>) -> Self {
        HmacConfig {
            secrets: secrets.into_iter().map(Into::into).collect(),
            clients: BTreeMap::new(),
            drift_window: default_drift(),
        }
    }

    /// Grants `scope` to `client_id`.
    pub fn with_client(mut self, client_id: &str, scope: Scope) -> Self {
        self.clients.insert(client_id.to_owned(), scope);
        self
    }
}

#[derive(Debug, Default, Deserialize)]
struct FileConfig {
    gateway: Option<FileGateway>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileGateway {
    listen: Option<String>,
    static_token: Option<String>,
    static_token_scope: Option<Scope>,
    #[serde(default)]
    tokens: Vec<TokenGrant>,
    max_clients: Option<usize>,
    max_message_size_bytes: Option<usize>,
    max_batch: Option<usize>,
    auth_grace_ms: Option<u64>,
    max_subscriptions_per_client: Option<usize>,
    event_buffer_per_client: Option<usize>,
    rate_limit_per_second: Option<u32>,
    heartbeat_interval_ms: Option<u64>,
    heartbeat_max_misses: Option<u32>,
    heartbeat_timeout_ms: Option<u64>,
    redis_url: Option<String>,
    instance_id: Option<String>,
    auth_cache_ttl_ms: Option<u64>,
    hmac: Option<HmacConfig>,
    read_your_write_timeout_ms: Option<u64>,
    max_replay_scan: Option<u64>,
    neo4j: Option<crate::projection::neo4j::Neo4jConfig>,
    knowledge_timeout_ms: Option<u64>,
    knowledge_max_results: Option<usize>,
    allowed_origins: Option<Vec<String>>,
    tls: Option<super::tls::FileTls>,
}

fn positive<T: PartialOrd + Default + Copy>(
    field: &str,
    value: Option<T>,
    target: &mut T,
) -> Result<(), GatewayConfigError> {
    if let Some(v) = value {
        if v <= T::default() {
            return Err(GatewayConfigError::Invalid {
                field: format!("gateway.{field}"),
                reason: "must be at least 1".into(),
            });
        }
        *target = v;
    }
    Ok(())
}

impl GatewayConfig {
    /// Parses the `gateway:` section of a YAML document (absent: defaults).
    pub fn from_yaml(text: &str) -> Result<Self, GatewayConfigError> {
        let file: FileConfig =
            serde_yaml_ng::from_str(text).map_err(|e| GatewayConfigError::File {
                path: "<inline>".into(),
                reason: e.to_string(),
            })?;
        let g = file.gateway.unwrap_or_default();
        let mut c = GatewayConfig::default();
        if let Some(listen) = g.listen {
            c.listen = parse_listen(&listen)?;
        }
        if let Some(token) = g.static_token {
            c.tokens.push(TokenGrant {
                token,
                scope: g.static_token_scope.unwrap_or(Scope::ReadWrite),
                name: Some("static".into()),
            });
        }
        for (i, grant) in g.tokens.into_iter().enumerate() {
            if grant.token.is_empty() {
                return Err(GatewayConfigError::Invalid {
                    field: format!("gateway.tokens[{i}].token"),
                    reason: "must not be empty".into(),
                });
            }
            c.tokens.push(grant);
        }
        positive("max_clients", g.max_clients, &mut c.max_clients)?;
        positive(
            "max_message_size_bytes",
            g.max_message_size_bytes,
            &mut c.max_message_size_bytes,
        )?;
        positive("max_batch", g.max_batch, &mut c.max_batch)?;
        positive(
            "max_subscriptions_per_client",
            g.max_subscriptions_per_client,
            &mut c.max_subscriptions_per_client,
        )?;
        positive(
            "event_buffer_per_client",
            g.event_buffer_per_client,
            &mut c.event_buffer_per_client,
        )?;
        positive(
            "rate_limit_per_second",
            g.rate_limit_per_second,
            &mut c.rate_limit_per_second,
        )?;
        positive(
            "heartbeat_max_misses",
            g.heartbeat_max_misses,
            &mut c.heartbeat_max_misses,
        )?;
        positive("max_replay_scan", g.max_replay_scan, &mut c.max_replay_scan)?;
        positive(
            "knowledge_max_results",
            g.knowledge_max_results,
            &mut c.knowledge_max_results,
        )?;
        for (field, value, target) in [
            ("auth_grace_ms", g.auth_grace_ms, &mut c.auth_grace),
            (
                "heartbeat_interval_ms",
                g.heartbeat_interval_ms,
                &mut c.heartbeat_interval,
            ),
            (
                "read_your_write_timeout_ms",
                g.read_your_write_timeout_ms,
                &mut c.read_your_write_timeout,
            ),
            (
                "heartbeat_timeout_ms",
                g.heartbeat_timeout_ms,
                &mut c.heartbeat_timeout,
            ),
            (
                "auth_cache_ttl_ms",
                g.auth_cache_ttl_ms,
                &mut c.auth_cache_ttl,
            ),
            (
                "knowledge_timeout_ms",
                g.knowledge_timeout_ms,
                &mut c.knowledge_timeout,
            ),
        ] {
            let mut ms = 0u64;
            positive(field, value, &mut ms)?;
            if value.is_some() {
                *target = Duration::from_millis(ms);
            }
        }
        c.redis_url = g.redis_url.filter(|u| !u.trim().is_empty());
        if let Some(id) = g.instance_id {
            if id.trim().is_empty() {
                return Err(GatewayConfigError::Invalid {
                    field: "gateway.instance_id".into(),
                    reason: "must not be empty".into(),
                });
            }
            c.instance_id = id;
        }
        if let Some(h) = g.hmac {
            c = c.with_hmac(h)?;
        }
        if let Some(n) = g.neo4j {
            if n.uri.trim().is_empty() {
                return Err(GatewayConfigError::Invalid {
                    field: "gateway.neo4j.uri".into(),
                    reason: "must not be empty (remove `neo4j` to run without Neo4j)".into(),
                });
            }
            c.neo4j = Some(n);
        }
        for (i, entry) in g.allowed_origins.unwrap_or_default().iter().enumerate() {
            let entry = super::origin::normalize_entry(entry).map_err(|reason| {
                GatewayConfigError::Invalid {
                    field: format!("gateway.allowed_origins[{i}]"),
                    reason,
                }
            })?;
            c.allowed_origins.push(entry);
        }
        c.tls = g
            .tls
            .map(super::tls::FileTls::resolve)
            .transpose()?
            .flatten();
        Ok(c)
    }

    /// Enables the `hmac` strategy. Refuses an empty secret list, empty secrets and a
    /// zero drift window.
    pub fn with_hmac(mut self, hmac: HmacConfig) -> Result<Self, GatewayConfigError> {
        let invalid = |field: &str, reason: &str| GatewayConfigError::Invalid {
            field: format!("gateway.hmac.{field}"),
            reason: reason.into(),
        };
        if hmac.secrets.is_empty() {
            return Err(invalid("secrets", "at least one secret is required"));
        }
        if let Some(i) = hmac.secrets.iter().position(|s| s.is_empty()) {
            return Err(invalid(&format!("secrets[{i}]"), "must not be empty"));
        }
        if hmac.drift_window.is_zero() {
            return Err(invalid("drift_window_ms", "must be at least 1"));
        }
        self.hmac = Some(hmac);
        Ok(self)
    }

    /// Reads the `gateway:` section of a YAML file.
    pub fn load(path: &Path) -> Result<Self, GatewayConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| GatewayConfigError::File {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        Self::from_yaml(&text).map_err(|e| match e {
            GatewayConfigError::File { reason, .. } => GatewayConfigError::File {
                path: path.display().to_string(),
                reason,
            },
            other => other,
        })
    }

    /// Adds the static token `token` with scope read_write, ahead of other grants.
    /// Empty tokens are refused (they would never authenticate anyway).
    pub fn with_static_token(mut self, token: impl Into<String>) -> Self {
        let token = token.into();
        if !token.is_empty() {
            self.tokens.insert(
                0,
                TokenGrant {
                    token,
                    scope: Scope::ReadWrite,
                    name: Some("static".into()),
                },
            );
        }
        self
    }

    /// Adds a grant.
    pub fn with_grant(mut self, token: impl Into<String>, scope: Scope, name: &str) -> Self {
        self.tokens.push(TokenGrant {
            token: token.into(),
            scope,
            name: Some(name.into()),
        });
        self
    }
}

/// Parses `HOST:PORT` (e.g. `127.0.0.1:18790`, `0.0.0.0:0`).
pub fn parse_listen(text: &str) -> Result<SocketAddr, GatewayConfigError> {
    text.parse().map_err(|e| GatewayConfigError::Invalid {
        field: "gateway.listen".into(),
        reason: format!("`{text}` is not HOST:PORT: {e}"),
    })
}
