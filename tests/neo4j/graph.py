"""What Neo4j's official Python driver reads of the knowledge graph the sink wrote.

    python3 tests/neo4j/graph.py URI USER PASSWORD ID...

Prints one JSON object: "nodes" (each node whose `id` is one of ID: id, labels,
properties) and "relationships" (each one leaving such a node: id, type, source,
target), sorted by id; and "server" (the agent and Bolt version it spoke).
"""

import json
import sys

from neo4j import GraphDatabase


def main() -> None:
    uri, user, password, *ids = sys.argv[1:]
    with GraphDatabase.driver(uri, auth=(user, password)) as driver:
        with driver.session() as session:
            nodes = session.run(
                "MATCH (n) WHERE n.id IN $ids RETURN n ORDER BY n.id", ids=ids
            ).values()
            rels = session.run(
                "MATCH (a)-[r]->(b) WHERE a.id IN $ids "
                "RETURN r.id AS id, type(r) AS type, a.id AS source, b.id AS target ORDER BY id",
                ids=ids,
            ).data()
        info = driver.get_server_info()
    print(
        json.dumps(
            {
                "nodes": [
                    {"id": n["id"], "labels": sorted(n.labels), "properties": dict(n)}
                    for (n,) in nodes
                ],
                "relationships": rels,
                "server": {"agent": info.agent, "protocol": list(info.protocol_version)},
            },
            default=str,
        )
    )


if __name__ == "__main__":
    main()
