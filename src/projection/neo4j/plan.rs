//! The sink's Cypher as pure functions: which nodes and relationships changed since
//! the last write ([`diff`]), and the batched, idempotent statements that write them
//! ([`statements`]).
//!
//! Every node is `MERGE`d on its label and `id` and gets `SET n += row.properties`;
//! every relationship is `MERGE`d between its endpoints (matched by label and id) with
//! its `id` as the merge key; evicted nodes are `DETACH DELETE`d. Running the same
//! statements twice leaves the database as after once. Property values Neo4j cannot
//! store (maps, lists of mixed or nested values) are stored as JSON text.

use std::borrow::Cow;
use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};

use orchestrata_projections::graph::{
    Node, NodeLabel, NodeQuery, Properties, RelQuery, RelType, Relationship,
};
use orchestrata_projections::GraphView;
use serde_json::{json, Map, Value};

/// Rows per statement.
pub const BATCH_ROWS: usize = 500;

/// One statement with its parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Statement {
    /// The Cypher text.
    pub cypher: String,
    /// `$rows` or `$ids`.
    pub params: Value,
}

/// What the sink has written: a fingerprint of each node and relationship by id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Written {
    nodes: HashMap<String, u64>,
    rels: HashMap<String, u64>,
}

impl Written {
    /// Records `changes` as written (call after its statements succeeded).
    pub fn commit(&mut self, changes: &Changes<'_>) {
        for n in &changes.nodes {
            self.nodes.insert(n.id.clone(), fingerprint(&n.properties));
        }
        for r in &changes.rels {
            self.rels.insert(r.id.clone(), fingerprint(&r.properties));
        }
        for id in &changes.removed_nodes {
            self.nodes.remove(id);
        }
        for id in &changes.removed_rels {
            self.rels.remove(id);
        }
    }

    /// Nodes and relationships written so far.
    pub fn counts(&self) -> (usize, usize) {
        (self.nodes.len(), self.rels.len())
    }
}

/// What changed in the view since [`Written`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Changes<'a> {
    /// New or changed nodes (packets and decisions written out by the view, the
    /// others lent).
    pub nodes: Vec<Cow<'a, Node>>,
    /// New or changed relationships.
    pub rels: Vec<Cow<'a, Relationship>>,
    /// Nodes written before and gone from the view now (evicted).
    pub removed_nodes: Vec<String>,
    /// Relationships written before and gone from the view now.
    pub removed_rels: Vec<String>,
}

impl Changes<'_> {
    /// Whether there is nothing to write.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
            && self.rels.is_empty()
            && self.removed_nodes.is_empty()
            && self.removed_rels.is_empty()
    }
}

fn fingerprint(properties: &Properties) -> u64 {
    let mut h = DefaultHasher::new();
    serde_json::to_string(properties)
        .unwrap_or_default()
        .hash(&mut h);
    h.finish()
}

/// What `view` holds that `written` does not (or holds differently).
pub fn diff<'a>(view: &'a GraphView, written: &Written) -> Changes<'a> {
    let mut changes = Changes::default();
    let all_nodes = NodeQuery::default();
    for n in view.nodes(&all_nodes) {
        if written.nodes.get(&n.id) != Some(&fingerprint(&n.properties)) {
            changes.nodes.push(n);
        }
    }
    let all_rels = RelQuery::default();
    for r in view.relationships(&all_rels) {
        if written.rels.get(&r.id) != Some(&fingerprint(&r.properties)) {
            changes.rels.push(r);
        }
    }
    let mut removed: Vec<String> = written
        .nodes
        .keys()
        .filter(|id| view.node(id).is_none())
        .cloned()
        .collect();
    removed.sort();
    changes.removed_nodes = removed;
    let mut removed: Vec<String> = written
        .rels
        .keys()
        .filter(|id| view.relationship(id).is_none())
        .cloned()
        .collect();
    removed.sort();
    changes.removed_rels = removed;
    changes
}

/// The label of a node id (`volk:U:Ox` -> `Volk`).
pub fn label_of(id: &str) -> Option<NodeLabel> {
    let prefix = id.split(':').next()?;
    NodeLabel::ALL.into_iter().find(|l| l.prefix() == prefix)
}

/// Properties as Neo4j can store them: scalars and lists of one scalar type as they
/// are; maps and other lists as JSON text.
pub fn neo4j_properties(properties: &Properties) -> Map<String, Value> {
    properties
        .iter()
        .map(|(k, v)| (k.clone(), neo4j_value(v)))
        .collect()
}

fn neo4j_value(v: &Value) -> Value {
    match v {
        Value::Object(_) => Value::String(v.to_string()),
        Value::Array(items) => {
            let kind = |x: &Value| match x {
                Value::String(_) => 1,
                Value::Number(_) => 2,
                Value::Bool(_) => 3,
                _ => 0,
            };
            let first = items.first().map_or(1, kind);
            if first != 0 && items.iter().all(|x| kind(x) == first) {
                v.clone()
            } else {
                Value::String(v.to_string())
            }
        }
        other => other.clone(),
    }
}

/// One uniqueness constraint per label on `id` (also the index `MERGE` uses).
pub fn constraints() -> Vec<Statement> {
    NodeLabel::ALL
        .into_iter()
        .map(|l| Statement {
            cypher: format!(
                "CREATE CONSTRAINT orchestrata_{}_id IF NOT EXISTS FOR (n:{l}) REQUIRE n.id IS UNIQUE",
                l.prefix()
            ),
            params: json!({}),
        })
        .collect()
}

/// `MERGE` statement for nodes of `label`.
pub fn merge_nodes(label: NodeLabel) -> String {
    format!("UNWIND $rows AS row MERGE (n:{label} {{id: row.id}}) SET n += row.properties")
}

/// `MERGE` statement for relationships of `rel_type` from `from` to `to` nodes.
pub fn merge_rels(rel_type: RelType, from: NodeLabel, to: NodeLabel) -> String {
    format!(
        "UNWIND $rows AS row MATCH (a:{from} {{id: row.from}}) MATCH (b:{to} {{id: row.to}}) \
         MERGE (a)-[r:{rel_type} {{id: row.id}}]->(b) SET r += row.properties"
    )
}

/// `DETACH DELETE` statement for nodes of `label`.
pub fn delete_nodes(label: NodeLabel) -> String {
    format!("UNWIND $ids AS id MATCH (n:{label} {{id: id}}) DETACH DELETE n")
}

/// `DELETE` statement for relationships of `rel_type`.
pub fn delete_rels(rel_type: RelType) -> String {
    format!("UNWIND $ids AS id MATCH ()-[r:{rel_type} {{id: id}}]->() DELETE r")
}

fn batched(cypher: String, key: &str, items: Vec<Value>, rows: usize, out: &mut Vec<Statement>) {
    for chunk in items.chunks(rows.max(1)) {
        out.push(Statement {
            cypher: cypher.clone(),
            params: json!({ key: chunk }),
        });
    }
}

/// The statements that write `changes`, `rows` rows each: node merges (by label),
/// relationship merges (by type and endpoint labels), then deletions. Relationships
/// whose endpoints have an unknown label are skipped.
pub fn statements(changes: &Changes<'_>, rows: usize) -> Vec<Statement> {
    let mut out = Vec::new();
    let mut nodes: BTreeMap<NodeLabel, Vec<Value>> = BTreeMap::new();
    for n in &changes.nodes {
        let mut properties = neo4j_properties(&n.properties);
        properties.insert("id".into(), json!(n.id));
        nodes
            .entry(n.label)
            .or_default()
            .push(json!({"id": n.id, "properties": properties}));
    }
    for (label, items) in nodes {
        batched(merge_nodes(label), "rows", items, rows, &mut out);
    }
    let mut rels: BTreeMap<(RelType, NodeLabel, NodeLabel), Vec<Value>> = BTreeMap::new();
    for r in &changes.rels {
        let (Some(from), Some(to)) = (label_of(&r.from), label_of(&r.to)) else {
            continue;
        };
        let mut properties = neo4j_properties(&r.properties);
        properties.insert("id".into(), json!(r.id));
        rels.entry((r.rel_type, from, to))
            .or_default()
            .push(json!({"id": r.id, "from": r.from, "to": r.to, "properties": properties}));
    }
    for ((t, from, to), items) in rels {
        batched(merge_rels(t, from, to), "rows", items, rows, &mut out);
    }
    let mut gone_rels: BTreeMap<RelType, Vec<Value>> = BTreeMap::new();
    for id in &changes.removed_rels {
        if let Some(t) = id.split(':').next().and_then(RelType::parse) {
            gone_rels.entry(t).or_default().push(json!(id));
        }
    }
    for (t, ids) in gone_rels {
        batched(delete_rels(t), "ids", ids, rows, &mut out);
    }
    let mut gone_nodes: BTreeMap<NodeLabel, Vec<Value>> = BTreeMap::new();
    for id in &changes.removed_nodes {
        if let Some(l) = label_of(id) {
            gone_nodes.entry(l).or_default().push(json!(id));
        }
    }
    for (l, ids) in gone_nodes {
        batched(delete_nodes(l), "ids", ids, rows, &mut out);
    }
    out
}

#[cfg(test)]
mod tests;
