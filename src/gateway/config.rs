//! Gateway settings: the `gateway:` section of the YAML config, then flags and env.
//!
//! ```yaml
//! gateway:
//!   listen: 127.0.0.1:18790        # 0.0.0.0:18790 in the container config
//!   static_token: «secret»          # or GATEWAY_TOKEN: principal `operator`, acts as U:GW
//!   tokens:                         # more principals, e.g. an admin token
//!     - { token: «secret», scope: admin, name: ops }
//!     - { token: «secret», scope: read_write, name: intake, acts_as: [U:Cx] }
//!   prolog_policy: false            # the policy admits clients by claimed id (off)
//!   max_clients: 100               # authenticated clients
//!   max_pending_auth: 100           # still authenticating (default: max_clients, ≥ 32)
//!   max_pending_auth_per_peer: 100  # of those from one address (default: all of them)
//!   max_connections_per_principal: 100  # authenticated, one principal (default: max_clients)
//!   max_message_size_bytes: 1048576
//!   max_batch: 50
//!   auth_grace_ms: 5000
//!   max_subscriptions_per_client: 50
//!   event_buffer_per_client: 1000
//!   rate_limit_per_second: 500
//!   max_in_flight_per_connection: 256  # requests one connection runs at once
//!   heartbeat_interval_ms: 30000
//!   heartbeat_max_misses: 3
//!   heartbeat_timeout_ms: 10000     # a ping unanswered this long is a miss
//!   read_your_write_timeout_ms: 2000
//!   redis_url: redis://127.0.0.1:6379  # or ORCHESTRATA_GATEWAY__REDIS_URL, `up --redis`
//!   instance_id: gw-a               # default: random gw-xxxxxxxx
//!   auth_cache_ttl_ms: 300000       # prolog_policy decisions
//!   health_cache_ms: 1000           # /ready and /metrics reuse one log probe this long
//!   hmac:                           # enables the hmac strategy
//!     clients:                      # each client signs with its own secret(s)
//!       billing-bot:
//!         scope: read_write
//!         secrets: [«new», «old»]   # several during rotation
//!         acts_as: ["U:Cx"]         # the Volks it may act as
//!         default_volk: "U:Cx"      # the sender of a cxp.send without `from`
//!     # legacy form (the spec's single hmac_secret): one secret list shared by every
//!     # client listed as `id: scope`; any holder can claim any of those ids (warned)
//!     # secrets: [«shared»]
//!     # clients: { billing-bot: read_write }
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

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use super::auth::{Scope, TokenGrant};

mod hmac;
use super::principal::{OPERATOR_NAME, OPERATOR_VOLK};
pub use hmac::{HmacClient, HmacConfig};

/// Default listen address of `orchestrata up`.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:18790";

/// Default `max_pending_auth`: connections that may be authenticating at once.
pub const DEFAULT_MAX_PENDING_AUTH: usize = 32;

/// Default `max_in_flight_per_connection`: requests one connection runs at once.
pub const DEFAULT_MAX_IN_FLIGHT_PER_CONNECTION: usize = 256;

/// Everything the gateway needs besides the components it serves.
#[derive(Debug, Clone)]
pub struct GatewayConfig {
    /// Where to listen (port 0 picks a free port; see `RunningGateway::local_addr`).
    pub listen: SocketAddr,
    /// Accepted static tokens, each a principal. The operator's static token
    /// (`static_token` or `GATEWAY_TOKEN`, principal `operator`) comes first; more
    /// grants name their principal, scope and the Volks they act as.
    pub tokens: Vec<TokenGrant>,
    /// Scope of the operator's static token (read_write unless configured).
    pub static_token_scope: Scope,
    /// Whether the `prolog_policy` strategy is on. Off by default: it admits a client
    /// on its claimed id alone, so it is for deployments whose policy registers
    /// clients and whose network vouches for who connects.
    pub prolog_policy: bool,
    /// Authenticated clients at most; one more is closed with 1013 (Try Again Later)
    /// `max_clients` when it authenticates (or at once while the gateway is full).
    pub max_clients: usize,
    /// Connections still authenticating at most (each for up to `auth_grace`); one more
    /// is closed at once with 1013 `max_pending_auth`. Kept apart from `max_clients` so
    /// sockets that never authenticate cannot lock authenticated clients out. Unless
    /// configured, as many as `max_clients` (at least [`DEFAULT_MAX_PENDING_AUTH`]), so
    /// a reconnect storm of every client is admitted.
    pub max_pending_auth: usize,
    /// Of those, from one peer address at most (`None`: `max_pending_auth`); one more
    /// is closed with 1013 `max_pending_auth_per_peer`. Behind a proxy every client
    /// shares the proxy's address: leave it unset there.
    pub max_pending_auth_per_peer: Option<usize>,
    /// Authenticated connections of one principal at most (`None`: `max_clients`); one
    /// more is closed with 1013 `max_connections_per_principal`.
    pub max_connections_per_principal: Option<usize>,
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
    /// Requests one connection runs at once (a batch counts each member). When they
    /// are all running, the connection's reader stops reading until one finishes:
    /// back-pressure, nothing is refused (see `gateway::inflight`).
    pub max_in_flight_per_connection: usize,
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
    /// How long `/ready` and `/metrics` reuse one probe of the log (no log connection
    /// per request; see `gateway::readiness`).
    pub health_cache: Duration,
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
            static_token_scope: Scope::ReadWrite,
            prolog_policy: false,
            max_clients: 100,
            max_pending_auth: DEFAULT_MAX_PENDING_AUTH,
            max_pending_auth_per_peer: None,
            max_connections_per_principal: None,
            max_message_size_bytes: 1_048_576,
            max_batch: 50,
            auth_grace: Duration::from_secs(5),
            max_subscriptions_per_client: 50,
            event_buffer_per_client: 1000,
            rate_limit_per_second: 500,
            max_in_flight_per_connection: DEFAULT_MAX_IN_FLIGHT_PER_CONNECTION,
            heartbeat_interval: Duration::from_secs(30),
            heartbeat_max_misses: 3,
            heartbeat_timeout: Duration::from_secs(10),
            redis_url: None,
            instance_id: super::shared::new_instance_id(),
            auth_cache_ttl: Duration::from_secs(300),
            hmac: None,
            read_your_write_timeout: Duration::from_secs(2),
            health_cache: Duration::from_secs(1),
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
    prolog_policy: Option<bool>,
    max_clients: Option<usize>,
    max_pending_auth: Option<usize>,
    max_pending_auth_per_peer: Option<usize>,
    max_connections_per_principal: Option<usize>,
    max_message_size_bytes: Option<usize>,
    max_batch: Option<usize>,
    auth_grace_ms: Option<u64>,
    max_subscriptions_per_client: Option<usize>,
    event_buffer_per_client: Option<usize>,
    rate_limit_per_second: Option<u32>,
    max_in_flight_per_connection: Option<usize>,
    heartbeat_interval_ms: Option<u64>,
    heartbeat_max_misses: Option<u32>,
    heartbeat_timeout_ms: Option<u64>,
    redis_url: Option<String>,
    instance_id: Option<String>,
    auth_cache_ttl_ms: Option<u64>,
    hmac: Option<HmacConfig>,
    read_your_write_timeout_ms: Option<u64>,
    health_cache_ms: Option<u64>,
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
        c.static_token_scope = g.static_token_scope.unwrap_or(Scope::ReadWrite);
        if let Some(token) = g.static_token.filter(|t| !t.trim().is_empty()) {
            c = c.with_static_token(token);
        }
        for (i, grant) in g.tokens.into_iter().enumerate() {
            check_grant(i, &grant)?;
            c.tokens.push(grant);
        }
        c.prolog_policy = g.prolog_policy.unwrap_or(false);
        positive("max_clients", g.max_clients, &mut c.max_clients)?;
        c.max_pending_auth = c.max_clients.max(DEFAULT_MAX_PENDING_AUTH);
        positive(
            "max_pending_auth",
            g.max_pending_auth,
            &mut c.max_pending_auth,
        )?;
        for (field, value, target) in [
            (
                "max_pending_auth_per_peer",
                g.max_pending_auth_per_peer,
                &mut c.max_pending_auth_per_peer,
            ),
            (
                "max_connections_per_principal",
                g.max_connections_per_principal,
                &mut c.max_connections_per_principal,
            ),
        ] {
            let mut n = 0usize;
            positive(field, value, &mut n)?;
            *target = value.map(|_| n);
        }
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
            "max_in_flight_per_connection",
            g.max_in_flight_per_connection,
            &mut c.max_in_flight_per_connection,
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
            ("health_cache_ms", g.health_cache_ms, &mut c.health_cache),
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

    /// Enables the `hmac` strategy after [`HmacConfig::validate`].
    pub fn with_hmac(mut self, hmac: HmacConfig) -> Result<Self, GatewayConfigError> {
        hmac.validate()?;
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

    /// Adds the operator's static token `token` (scope `static_token_scope`,
    /// read_write by default; principal `operator`, acting as the operator Volk
    /// `U:GW`), ahead of other grants. Empty tokens are ignored (they would never
    /// authenticate anyway); a second call replaces the first token.
    pub fn with_static_token(mut self, token: impl Into<String>) -> Self {
        let token = token.into();
        if token.is_empty() {
            return self;
        }
        self.tokens.retain(|g| !is_operator(g));
        let grant = TokenGrant::new(token, self.static_token_scope, OPERATOR_NAME)
            .acting_as([OPERATOR_VOLK]);
        self.tokens.insert(0, grant);
        self
    }

    /// Whether the operator's static token is set (from the file or a flag).
    pub fn has_static_token(&self) -> bool {
        self.tokens.iter().any(is_operator)
    }

    /// Adds a grant that acts as no Volk (admin grants act as any).
    pub fn with_grant(self, token: impl Into<String>, scope: Scope, name: &str) -> Self {
        self.with_token_grant(TokenGrant::new(token, scope, name))
    }

    /// Adds `grant` as it is (see [`TokenGrant::acting_as`]).
    pub fn with_token_grant(mut self, grant: TokenGrant) -> Self {
        self.tokens.push(grant);
        self
    }
}

fn is_operator(grant: &TokenGrant) -> bool {
    grant.name.as_deref() == Some(OPERATOR_NAME)
}

/// Refuses an empty token, the reserved principal name `operator` (the static
/// token's) and malformed Volk aliases in a `gateway.tokens` entry.
fn check_grant(i: usize, grant: &TokenGrant) -> Result<(), GatewayConfigError> {
    let invalid = |field: &str, reason: String| GatewayConfigError::Invalid {
        field: format!("gateway.tokens[{i}].{field}"),
        reason,
    };
    if grant.token.trim().is_empty() {
        return Err(invalid("token", "must not be empty".into()));
    }
    if grant.name.as_deref() == Some(OPERATOR_NAME) {
        return Err(invalid(
            "name",
            format!("`{OPERATOR_NAME}` is reserved for the static token (gateway.static_token or GATEWAY_TOKEN)"),
        ));
    }
    let aliases = grant.acts_as.iter().chain(grant.default_volk.iter());
    for alias in aliases {
        if orchestrata_schemas::cxp::VolkAlias::parse_field(alias, "acts_as").is_err() {
            return Err(invalid(
                "acts_as",
                format!("`{alias}` is not a Volk alias (U: and two letters, e.g. U:Cx)"),
            ));
        }
    }
    if let Some(d) = &grant.default_volk {
        if !grant.acts_as.contains(d) && grant.scope != Scope::Admin {
            return Err(invalid(
                "default_volk",
                format!("`{d}` is not among acts_as"),
            ));
        }
    }
    Ok(())
}

/// Parses `HOST:PORT` (e.g. `127.0.0.1:18790`, `0.0.0.0:0`).
pub fn parse_listen(text: &str) -> Result<SocketAddr, GatewayConfigError> {
    text.parse().map_err(|e| GatewayConfigError::Invalid {
        field: "gateway.listen".into(),
        reason: format!("`{text}` is not HOST:PORT: {e}"),
    })
}
