//! Neo4j: where the knowledge graph is served to Cypher (`knowledge.query`) and where
//! the graph projection is written to ([`spawn_neo4j_sink`]).
//!
//! - [`Neo4jConfig`]: `gateway.neo4j {uri, user, password}` (env
//!   `ORCHESTRATA_GATEWAY__NEO4J__URI`, `..._USER`, `..._PASSWORD`); the password never
//!   appears in `Debug` output and `config.get` redacts it.
//! - [`graph`]: a shared connection pool per (uri, user), created on first use.
//! - [`plan`]: the sink's Cypher, as pure functions from view changes to statements
//!   (`UNWIND $rows AS row MERGE … SET n += row.properties`), idempotent by node and
//!   relationship id, so a replayed batch changes nothing.
//! - [`spawn_neo4j_sink`]: follows a live [`GraphView`](orchestrata_projections::GraphView)
//!   and writes what changed, in batches. When Neo4j is down the writes are deferred
//!   (ERR-010): nothing is marked written, and the next round retries.
//!
//! The statements are unit-tested as text; `tests/knowledge_neo4j.rs` runs the sink and
//! `knowledge.query` against a real Neo4j 5.26 community server (`tests/neo4j/`), which
//! accepts neo4rs 0.8's Bolt 4.1.

pub mod dialect;
pub mod plan;
mod sink;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;

use serde::Deserialize;

pub use sink::{spawn_neo4j_sink, Neo4jSink, SinkConfig};

/// How to reach Neo4j.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Neo4jConfig {
    /// Bolt address, e.g. `neo4j://127.0.0.1:7687` or `127.0.0.1:7687`.
    pub uri: String,
    /// User name.
    #[serde(default = "default_user")]
    pub user: String,
    /// Password (never logged, redacted by `config.get`).
    #[serde(default)]
    pub password: String,
}

fn default_user() -> String {
    "neo4j".into()
}

impl fmt::Debug for Neo4jConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Neo4jConfig")
            .field("uri", &self.uri)
            .field("user", &self.user)
            .field("password", &"<redacted>")
            .finish()
    }
}

/// Why Neo4j could not be used.
#[derive(Debug, thiserror::Error)]
pub enum Neo4jError {
    /// The configuration is unusable (bad URI, empty user...).
    #[error("neo4j config {field}: {reason}")]
    Config {
        /// E.g. `gateway.neo4j.uri`.
        field: &'static str,
        /// Why.
        reason: String,
    },
    /// Connecting or talking to the server failed.
    #[error("neo4j at {uri} is unavailable: {reason}")]
    Unavailable {
        /// Where.
        uri: String,
        /// Why.
        reason: String,
    },
    /// The server refused a statement (syntax, constraint, permission).
    #[error("neo4j refused the statement: {code}: {message}")]
    Refused {
        /// Neo4j status code, e.g. `Neo.ClientError.Statement.SyntaxError`.
        code: String,
        /// Its message.
        message: String,
    },
}

impl Neo4jError {
    /// Classifies a driver error: server-side refusals vs. an unreachable server.
    pub fn from_driver(uri: &str, e: neo4rs::Error) -> Self {
        match e {
            neo4rs::Error::Neo4j(n) => Neo4jError::Refused {
                code: n.code().to_owned(),
                message: n.message().to_owned(),
            },
            other => Neo4jError::Unavailable {
                uri: uri.to_owned(),
                reason: other.to_string(),
            },
        }
    }
}

type Pools = Mutex<HashMap<(String, String), neo4rs::Graph>>;

fn pools() -> &'static Pools {
    static POOLS: std::sync::OnceLock<Pools> = std::sync::OnceLock::new();
    POOLS.get_or_init(Default::default)
}

/// The connection pool for `config`, created on first use and shared by every caller
/// in the process (the gateway's queries and the sink). Creating the pool does not
/// need the server; the first statement does, and fails with
/// [`Neo4jError::Unavailable`] when it is down.
pub async fn graph(config: &Neo4jConfig) -> Result<neo4rs::Graph, Neo4jError> {
    if config.uri.trim().is_empty() {
        return Err(Neo4jError::Config {
            field: "gateway.neo4j.uri",
            reason: "must not be empty".into(),
        });
    }
    let key = (config.uri.clone(), config.user.clone());
    if let Some(g) = pools().lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
        return Ok(g.clone());
    }
    let built = neo4rs::ConfigBuilder::default()
        .uri(config.uri.as_str())
        .user(config.user.as_str())
        .password(config.password.as_str())
        .build()
        .map_err(|e| Neo4jError::Config {
            field: "gateway.neo4j",
            reason: e.to_string(),
        })?;
    let g = neo4rs::Graph::connect(built)
        .await
        .map_err(|e| Neo4jError::from_driver(&config.uri, e))?;
    pools()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(key, g.clone());
    Ok(g)
}

/// `host` and `port` of a Bolt URI (`neo4j://h:7687`, `bolt+s://h`, `h:7687`, `h`);
/// the port defaults to 7687.
pub fn address_of(uri: &str) -> Result<(String, u16), Neo4jError> {
    let invalid = |reason: String| Neo4jError::Config {
        field: "gateway.neo4j.uri",
        reason,
    };
    let rest = uri.split_once("://").map_or(uri, |(_, r)| r);
    let authority = rest.split(['/', '?']).next().unwrap_or_default();
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    if authority.is_empty() {
        return Err(invalid(format!("`{uri}` names no host")));
    }
    match authority.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() => port
            .parse()
            .map(|p| (host.to_owned(), p))
            .map_err(|e| invalid(format!("port `{port}` of `{uri}`: {e}"))),
        Some(_) => Err(invalid(format!("`{uri}` names no host"))),
        None => Ok((authority.to_owned(), 7687)),
    }
}

/// Checks that something accepts TCP connections at the configured address, within
/// `within`. The driver retries unreachable servers for up to a minute; this answers
/// "Neo4j is down" (ERR-010) at once instead.
pub async fn reachable(
    config: &Neo4jConfig,
    within: std::time::Duration,
) -> Result<(), Neo4jError> {
    let (host, port) = address_of(&config.uri)?;
    let down = |reason: String| Neo4jError::Unavailable {
        uri: config.uri.clone(),
        reason,
    };
    match tokio::time::timeout(
        within,
        tokio::net::TcpStream::connect((host.as_str(), port)),
    )
    .await
    {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(down(e.to_string())),
        Err(_) => Err(down(format!(
            "no TCP answer within {} ms",
            within.as_millis()
        ))),
    }
}

/// A JSON value as a Bolt parameter (objects become maps, arrays lists).
pub fn bolt(value: serde_json::Value) -> Result<neo4rs::BoltType, Neo4jError> {
    neo4rs::BoltType::try_from(value).map_err(|e| Neo4jError::Config {
        field: "params",
        reason: format!("not representable as a Cypher value: {e}"),
    })
}
