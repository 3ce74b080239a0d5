//! Which Cypher server the sink writes to, and what differs between them.
//!
//! The sink's data statements (`UNWIND … MERGE … SET n += …`, `DETACH DELETE`) are
//! openCypher and run unchanged on Neo4j 5 and FalkorDB. Schema statements do not:
//!
//! | | Neo4j 5 | FalkorDB |
//! |---|---|---|
//! | uniqueness of `id` per label | `CREATE CONSTRAINT name IF NOT EXISTS FOR (n:L) REQUIRE n.id IS UNIQUE` | no Cypher syntax (a syntax error); `GRAPH.CONSTRAINT CREATE` is a Redis command, unreachable over Bolt |
//! | index on `id` | implied by the constraint | `CREATE INDEX FOR (n:L) ON (n.id)`; no `IF NOT EXISTS`, a second run is refused ("already indexed") |
//! | `dbms.components()` | names `Neo4j Kernel` | unknown procedure |
//!
//! [`detect`] asks the server (`CALL dbms.components()`): Neo4j answers; a refusal
//! means another openCypher server, written to as [`Dialect::FalkorDb`]. On FalkorDB,
//! ids stay unique because every write `MERGE`s on them (one writer, the sink).

use serde_json::json;

use super::plan::Statement;
use super::{Neo4jConfig, Neo4jError};
use orchestrata_projections::graph::NodeLabel;

/// A Cypher server's dialect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// Neo4j 5 (the production target in compose; the tests run Neo4j 5.26).
    Neo4j,
    /// FalkorDB (Redis module serving Bolt 5), or another openCypher server without
    /// Neo4j's schema syntax.
    FalkorDb,
}

impl Dialect {
    /// Statements that index every label's `id` (the key every `MERGE` matches on):
    /// on Neo4j a uniqueness constraint (its backing index included), on FalkorDB a
    /// range index.
    pub fn schema(self) -> Vec<Statement> {
        NodeLabel::ALL
            .into_iter()
            .map(|l| Statement {
                cypher: match self {
                    Dialect::Neo4j => format!(
                        "CREATE CONSTRAINT orchestrata_{}_id IF NOT EXISTS FOR (n:{l}) REQUIRE n.id IS UNIQUE",
                        l.prefix()
                    ),
                    Dialect::FalkorDb => format!("CREATE INDEX FOR (n:{l}) ON (n.id)"),
                },
                params: json!({}),
            })
            .collect()
    }

    /// Whether the server's refusal of a [`Dialect::schema`] statement only says it
    /// was already applied (FalkorDB has no `IF NOT EXISTS` for indexes).
    pub fn already_applied(self, message: &str) -> bool {
        let m = message.to_ascii_lowercase();
        m.contains("already indexed") || m.contains("already exists")
    }
}

/// Asks the server which dialect it speaks. `Unavailable` when it cannot be asked.
pub async fn detect(config: &Neo4jConfig) -> Result<Dialect, Neo4jError> {
    let graph = super::graph(config).await?;
    let q = neo4rs::query("CALL dbms.components() YIELD name RETURN name");
    let answered = async {
        let mut rows = graph.execute(q).await?;
        let mut names = Vec::new();
        while let Some(row) = rows.next().await? {
            names.push(row.get::<String>("name").unwrap_or_default());
        }
        Ok::<_, neo4rs::Error>(names)
    };
    match answered
        .await
        .map_err(|e| Neo4jError::from_driver(&config.uri, e))
    {
        Ok(names) => {
            tracing::info!(components = ?names, "neo4j sink: the server is Neo4j");
            Ok(Dialect::Neo4j)
        }
        Err(Neo4jError::Refused { code, message }) => {
            tracing::info!(%code, %message, "neo4j sink: the server has no dbms.components(); writing in the FalkorDB dialect (indexes, no constraints)");
            Ok(Dialect::FalkorDb)
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // ISSUE-17: FalkorDB rejects Neo4j's constraint syntax; each dialect gets its own.
    // FalkorDB is no longer in the integration suite (issue 59: it crashed under the
    // sink), so these statements are its only coverage; Neo4j's also run on a real
    // Neo4j in tests/knowledge_neo4j.rs.
    #[test]
    fn each_dialect_indexes_every_label_in_its_own_syntax() {
        let neo = Dialect::Neo4j.schema();
        let falkor = Dialect::FalkorDb.schema();
        assert_eq!(neo.len(), NodeLabel::ALL.len());
        assert_eq!(falkor.len(), NodeLabel::ALL.len());
        assert_eq!(
            neo[0].cypher,
            "CREATE CONSTRAINT orchestrata_volk_id IF NOT EXISTS FOR (n:Volk) REQUIRE n.id IS UNIQUE"
        );
        for ((label, n), f) in NodeLabel::ALL.into_iter().zip(&neo).zip(&falkor) {
            assert_eq!(
                n.cypher,
                format!(
                    "CREATE CONSTRAINT orchestrata_{}_id IF NOT EXISTS FOR (n:{label}) REQUIRE n.id IS UNIQUE",
                    label.prefix()
                )
            );
            // FalkorDB: a range index, no constraint, no `IF NOT EXISTS` (both are
            // syntax errors there), no parameters.
            assert_eq!(f.cypher, format!("CREATE INDEX FOR (n:{label}) ON (n.id)"));
            assert_eq!((&n.params, &f.params), (&json!({}), &json!({})));
        }
        // A second run of FalkorDB's index statement is refused; that counts as done.
        assert!(Dialect::FalkorDb.already_applied("Attribute 'id' is already indexed"));
        assert!(Dialect::FalkorDb.already_applied("An equivalent index already exists"));
        assert!(!Dialect::FalkorDb.already_applied("Invalid input 'C'"));
        assert!(!Dialect::FalkorDb.already_applied("Unknown function 'nosuch'"));
    }
}
