//! `knowledge.nodes`, `knowledge.relationships` (browse the live graph view) and
//! `knowledge.query` (read-only Cypher on Neo4j) (US-010, REQ-014-151..165, ERR-007,
//! ERR-008, ERR-010).
//!
//! The graph is the [`GraphView`](orchestrata_projections::GraphView) folded from the
//! log: Volks, threads, sessions, packets and decisions with `SENT_TO`, `SENT_BY`,
//! `CHILD_OF`, `IN_THREAD`, `IN_SESSION` and `DECIDED_ABOUT` relationships. Browsing
//! needs no database. Cypher needs Neo4j (`gateway.neo4j`), which the graph sink keeps
//! in step with the same view.
//!
//! `knowledge.query` runs, in order: the read-only check ([`crate::gateway::cypher`]:
//! -32602 `mutation_not_allowed` / `invalid_cypher`), governance
//! (`decide(client(Id), 'knowledge.query', Pattern, [scope-S], R)`, answered by
//! `gateway_can_query_kg/2`; deny -32001 `governance_denied`, or -32001
//! `governance_unavailable` when the policy could not answer), then Neo4j with a
//! timeout (-32603 `query_timeout`) and a cap on records (`truncated: true`), in a
//! transaction that is always rolled back, so nothing the query does is committed.
//! Without Neo4j, or when it is down: -32603 `neo4j_unavailable`.

use std::time::{Duration, Instant};

use orchestrata_projections::graph::{
    Node, NodeLabel, NodeQuery, Properties, RelQuery, RelType, Relationship,
};
use orchestrata_schemas::events::types::DecisionResult;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::gateway::backends;
use crate::gateway::cypher;
use crate::gateway::error::{ErrorCode, RpcError};
use crate::gateway::methods::RpcResult;
use crate::gateway::state::Call;
use crate::governance::Request;
use crate::projection::neo4j::{self, Neo4jError};

/// Page size of `knowledge.nodes` / `knowledge.relationships` without a `limit`.
pub const DEFAULT_LIMIT: usize = 50;

/// How long a `knowledge.query` waits for Neo4j to accept a TCP connection before
/// answering `neo4j_unavailable`.
const REACH_TIMEOUT: Duration = Duration::from_secs(2);

/// A node as answered (REQ-014-158): id, labels, properties.
fn node_json(n: &Node) -> Value {
    json!({
        "id": n.id,
        "labels": [n.label],
        "label": n.label,
        "properties": n.properties,
    })
}

/// A relationship as answered (REQ-014-159): id, type, source, target, properties.
fn rel_json(r: &Relationship) -> Value {
    json!({
        "id": r.id,
        "type": r.rel_type,
        "source": r.from,
        "target": r.to,
        "properties": r.properties,
    })
}

/// `offset`/`limit` of `items`, with `total` and `has_more`.
fn page(key: &str, items: Vec<Value>, offset: usize, limit: usize) -> Value {
    let total = items.len();
    let slice: Vec<Value> = items.into_iter().skip(offset).take(limit).collect();
    json!({
        key: slice,
        "total": total,
        "offset": offset,
        "limit": limit,
        "has_more": offset.saturating_add(limit) < total,
    })
}

/// The one of `a` / `b` given, or -32602 `conflicting_params` when both differ.
fn either<'a>(
    a: &'a Option<String>,
    b: &'a Option<String>,
    names: (&str, &str),
) -> Result<Option<&'a str>, RpcError> {
    match (a.as_deref(), b.as_deref()) {
        (Some(x), Some(y)) if x != y => Err(RpcError::invalid_params(
            "conflicting_params",
            format!(
                "`{}` and `{}` name the same filter; give one",
                names.0, names.1
            ),
        )
        .with("field", names.1)),
        (x, y) => Ok(x.or(y)),
    }
}

#[derive(Deserialize)]
struct NodesParams {
    node_type: Option<String>,
    label: Option<String>,
    #[serde(default)]
    properties: Properties,
    #[serde(default)]
    offset: usize,
    limit: Option<usize>,
}

/// Nodes by label (`node_type`, or `label`) and exact property values, ordered by id,
/// `offset`/`limit` paginated, with `total` (REQ-014-156, 158, 160). An unknown label
/// is -32602 `unknown_node_type`.
pub async fn nodes(call: Call) -> RpcResult {
    let p: NodesParams = call.parse()?;
    let label = match either(&p.node_type, &p.label, ("node_type", "label"))? {
        None => None,
        Some(name) => Some(NodeLabel::parse(name).ok_or_else(|| {
            RpcError::invalid_params(
                "unknown_node_type",
                format!("no node type `{name}` (known: Volk, Thread, Session, Packet, Decision)"),
            )
            .with("field", "node_type")
        })?),
    };
    let views = backends::views(&call)?;
    let query = NodeQuery {
        label,
        properties: p.properties,
    };
    let graph = views.graph.read();
    let found: Vec<Value> = graph.nodes(&query).map(|n| node_json(&n)).collect();
    Ok(page(
        "nodes",
        found,
        p.offset,
        p.limit.unwrap_or(DEFAULT_LIMIT),
    ))
}

#[derive(Deserialize)]
struct RelsParams {
    relationship_type: Option<String>,
    #[serde(rename = "type")]
    rel_type: Option<String>,
    from: Option<String>,
    to: Option<String>,
    #[serde(default)]
    properties: Properties,
    #[serde(default)]
    offset: usize,
    limit: Option<usize>,
}

/// Relationships by type (`relationship_type`, or `type`), source (`from`) and target
/// (`to`) node id and exact property values, ordered by id, paginated, with `total`
/// (REQ-014-157, 159, 160). An unknown type is -32602 `unknown_relationship_type`.
pub async fn relationships(call: Call) -> RpcResult {
    let p: RelsParams = call.parse()?;
    let rel_type = match either(&p.relationship_type, &p.rel_type, ("relationship_type", "type"))? {
        None => None,
        Some(name) => Some(RelType::parse(name).ok_or_else(|| {
            RpcError::invalid_params(
                "unknown_relationship_type",
                format!(
                    "no relationship type `{name}` (known: SENT_TO, SENT_BY, CHILD_OF, IN_THREAD, IN_SESSION, DECIDED_ABOUT)"
                ),
            )
            .with("field", "relationship_type")
        })?),
    };
    let views = backends::views(&call)?;
    let query = RelQuery {
        rel_type,
        from: p.from,
        to: p.to,
        properties: p.properties,
    };
    let graph = views.graph.read();
    let found: Vec<Value> = graph.relationships(&query).map(|r| rel_json(&r)).collect();
    Ok(page(
        "relationships",
        found,
        p.offset,
        p.limit.unwrap_or(DEFAULT_LIMIT),
    ))
}

#[derive(Deserialize)]
struct QueryParams {
    cypher: String,
    #[serde(default)]
    params: Map<String, Value>,
    timeout_seconds: Option<f64>,
    max_results: Option<usize>,
}

/// Runs a read-only Cypher query on Neo4j (REQ-014-151..155, 161, 162, 164, 165).
/// Answers `records` (one object per row, keyed by column), `count`, `truncated`
/// (more rows than `max_results`), `execution_time_ms` and the `pattern` governance
/// judged.
pub async fn query(call: Call) -> RpcResult {
    let p: QueryParams = call.parse()?;
    let checked = cypher::validate(&p.cypher)
        .map_err(|e| RpcError::invalid_params(e.reason(), e.to_string()).with("field", "cypher"))?;
    authorize(&call, &checked.pattern).await?;
    let config = &call.gw.config;
    let Some(neo) = config.neo4j.clone() else {
        return Err(RpcError::internal(
            "neo4j_unavailable",
            "this gateway has no Neo4j configured (gateway.neo4j.uri)",
        ));
    };
    let timeout = p
        .timeout_seconds
        .filter(|s| s.is_finite() && *s > 0.0)
        .map_or(config.knowledge_timeout, Duration::from_secs_f64);
    let max_results = p.max_results.unwrap_or(config.knowledge_max_results).max(1);
    let mut q = neo4rs::query(&p.cypher);
    for (k, v) in p.params {
        let value = neo4j::bolt(v).map_err(|e| {
            RpcError::invalid_params("invalid_params", e.to_string())
                .with("field", format!("params.{k}"))
        })?;
        q = q.param(&k, value);
    }
    let started = Instant::now();
    let run = async {
        neo4j::reachable(&neo, timeout.min(REACH_TIMEOUT)).await?;
        let graph = neo4j::graph(&neo).await?;
        let fail = |e| Neo4jError::from_driver(&neo.uri, e);
        // A transaction that is always rolled back: whatever the query does (should
        // a writing clause ever pass the check, or a function write), nothing of it
        // is committed. neo4rs 0.8 has no access-mode API (its BEGIN carries only
        // `db`), so the Bolt `mode: "r"` cannot be sent; the rollback is the read-only
        // guarantee, and a cluster routes the transaction to the leader.
        let mut txn = graph.start_txn().await.map_err(fail)?;
        let mut rows = txn.execute(q).await.map_err(fail)?;
        let mut records = Vec::new();
        let mut truncated = false;
        while let Some(row) = rows.next(txn.handle()).await.map_err(fail)? {
            if records.len() == max_results {
                truncated = true;
                break;
            }
            let record = row
                .to_strict::<Value>()
                .unwrap_or_else(|e| json!({"_unserializable": e.to_string()}));
            records.push(record);
        }
        drop(rows);
        // Never committed either way: a failed ROLLBACK (e.g. rows left unread) leaves
        // the transaction to the RESET the pool sends before reusing the connection,
        // or to the server when the connection closes.
        if let Err(e) = txn.rollback().await {
            tracing::debug!(error = %e, "knowledge.query: rollback failed; the transaction is discarded with its connection");
        }
        Ok::<_, Neo4jError>((records, truncated))
    };
    let (records, truncated) = match tokio::time::timeout(timeout, run).await {
        Err(_) => {
            return Err(RpcError::internal(
                "query_timeout",
                format!(
                    "the query ran longer than {} ms and was cancelled",
                    timeout.as_millis()
                ),
            )
            .with(
                "timeout_ms",
                u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
            ))
        }
        Ok(Err(e @ Neo4jError::Refused { .. })) => {
            return Err(
                RpcError::invalid_params("cypher_error", e.to_string()).with("field", "cypher")
            )
        }
        Ok(Err(e)) => return Err(RpcError::internal("neo4j_unavailable", e)),
        Ok(Ok(found)) => found,
    };
    Ok(json!({
        "records": records,
        "count": records.len(),
        "truncated": truncated,
        "max_results": max_results,
        "execution_time_ms": started.elapsed().as_secs_f64() * 1000.0,
        "pattern": checked.pattern,
    }))
}

/// Asks governance whether this client may run `pattern` (REQ-014-161, 162). The
/// subject is the client's identity (the token grant's name, or the `prolog_policy` /
/// `hmac` client id), else its connection id. Without governance the method table's
/// scope check stands alone.
async fn authorize(call: &Call, pattern: &str) -> Result<(), RpcError> {
    let Some(g) = call.gw.services.governance.clone() else {
        return Ok(());
    };
    let (identity, scope) = {
        let state = call.client.lock();
        let auth = state.auth.as_ref();
        (
            auth.map_or_else(|| call.client_id(), |a| a.principal.name.clone()),
            auth.map_or("none", |a| a.scope().as_str()),
        )
    };
    let principal = call.client.principal().map(|p| p.name);
    let request = Request::client(&identity, "knowledge.query", pattern)
        .with("scope", scope)
        .by(principal);
    let decision = g
        .decide(request)
        .await
        .map_err(|e| RpcError::internal("governance_unavailable", e))?;
    if decision.result == DecisionResult::Allow {
        return Ok(());
    }
    // ISSUE-14: a policy that could not answer (engine down or restarting, Prolog
    // error) denies, but says so instead of blaming the client.
    if let Some(error) = decision.error {
        return Err(
            RpcError::new(ErrorCode::Unauthorized, "governance_unavailable")
                .with("detail", error)
                .with("decision_id", decision.decision_id.to_string()),
        );
    }
    Err(RpcError::new(ErrorCode::Unauthorized, "governance_denied")
        .with(
            "detail",
            format!("gateway_can_query_kg('{identity}', Pattern) does not hold"),
        )
        .with("decision_id", decision.decision_id.to_string())
        .with("rule_trace", json!(decision.trace)))
}
