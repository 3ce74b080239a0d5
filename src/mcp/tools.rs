//! The tool list, generated from the gateway's method table (REQ-014-204, REQ-014-206).
//!
//! One tool per row of [`METHODS`] marked `exposed`,
//! named after the method with `.` replaced by `_` (`cxp.send` -> `cxp_send`), described
//! by the row's summary and taking the row's params JSON Schema as `inputSchema`; plus
//! the `approve` tool. Adding a row to the table adds a tool: nothing here names a
//! method. Streaming methods and `auth.authenticate` are `exposed: false` and never
//! appear. A row's `mutates` flag decides gating: a tool is free to call only when its
//! method is marked read-only (`mutates: false`); everything else needs an approval.

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::gateway::methods::{Method, METHODS};

/// Name of the tool that issues approval tokens.
pub const APPROVE: &str = "approve";

/// The argument a gated tool call carries its token in.
pub const APPROVAL_TOKEN: &str = "approval_token";

/// One MCP tool backed by a gateway method.
#[derive(Debug, Clone)]
pub struct Tool {
    /// MCP name, e.g. `cxp_send`.
    pub name: String,
    /// The gateway method it calls, e.g. `cxp.send`.
    pub method: &'static str,
    /// Whether a call needs an approval token (the method is not marked read-only).
    pub gated: bool,
    /// Description shown to the model.
    pub description: String,
    /// JSON Schema of the arguments.
    pub input_schema: Value,
}

/// Every tool of the server: the exposed methods, then `approve`.
#[derive(Debug, Clone)]
pub struct Catalog {
    tools: Vec<Tool>,
    /// The `tools/list` result, built once.
    list: Value,
}

/// The MCP tool name of a gateway method.
pub fn tool_name(method: &str) -> String {
    method.replace('.', "_")
}

/// A method's params schema as a tool `inputSchema`: MCP wants `"type": "object"`, so a
/// schema that also accepts `null` (no params) is narrowed to objects; gated tools get
/// the `approval_token` property so clients that validate arguments let it through.
fn input_schema(method: &Method, gated: bool) -> Value {
    let mut schema = match serde_json::from_str::<Value>(method.params_schema) {
        Ok(Value::Object(map)) => map,
        // The schemas are compiled in and tested to parse; an unparsable one still
        // yields a usable tool (the gateway validates params either way).
        _ => Map::new(),
    };
    schema.insert("type".into(), json!("object"));
    if gated {
        let properties = schema.entry("properties").or_insert_with(|| json!({}));
        if let Value::Object(props) = properties {
            props.insert(
                APPROVAL_TOKEN.into(),
                json!({
                    "type": "string",
                    "description": "Single-use token from the `approve` tool for this tool and these exact arguments (valid 300 s)."
                }),
            );
        }
    }
    Value::Object(schema)
}

fn approve_tool(gated: &[&str]) -> Value {
    json!({
        "name": APPROVE,
        "title": "Approve a state-changing call",
        "description": "Issue a single-use approval token (valid 300 s) for one call of a state-changing tool with exactly these arguments. Then call that tool with the same arguments plus \"approval_token\".",
        "inputSchema": {
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "tool": {"type": "string", "enum": gated, "description": "The state-changing tool to approve."},
                "arguments": {"type": "object", "description": "The exact arguments the approved call will carry (without approval_token)."}
            },
            "required": ["tool"]
        },
        "annotations": {"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false, "openWorldHint": false}
    })
}

impl Catalog {
    /// The catalog of [`METHODS`].
    pub fn from_method_table() -> Catalog {
        Self::from_methods(METHODS)
    }

    /// The catalog of any method table (the exposed rows of `methods`).
    pub fn from_methods(methods: &[Method]) -> Catalog {
        let tools: Vec<Tool> = methods
            .iter()
            .filter(|m| m.exposed)
            .map(|m| {
                let gated = m.mutates;
                let mut description = m.summary.to_owned();
                if gated {
                    description.push_str(
                        " Changes state: needs an approval token from `approve` (pass it as `approval_token`).",
                    );
                }
                Tool {
                    name: tool_name(m.name),
                    method: m.name,
                    gated,
                    description,
                    input_schema: input_schema(m, gated),
                }
            })
            .collect();
        let list = list_of(&tools);
        Catalog { tools, list }
    }

    /// The tool called `name` (`None` for `approve` and unknown names).
    pub fn get(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// The method-backed tools, in table order.
    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }

    /// The `tools/list` result: every method-backed tool, then `approve`.
    pub fn list(&self) -> &Value {
        &self.list
    }
}

/// The `tools/list` result of `tools`: each of them, then `approve`.
fn list_of(tools: &[Tool]) -> Value {
    let gated: Vec<&str> = tools
        .iter()
        .filter(|t| t.gated)
        .map(|t| t.name.as_str())
        .collect();
    let mut listed: Vec<Value> = tools
        .iter()
        .map(|t| {
            json!({
                "name": t.name,
                "title": t.method,
                "description": t.description,
                "inputSchema": t.input_schema,
                "annotations": {"readOnlyHint": !t.gated, "openWorldHint": false},
            })
        })
        .collect();
    listed.push(approve_tool(&gated));
    json!({ "tools": listed })
}

/// Sorts object keys recursively, so equal arguments serialize to equal bytes whatever
/// order the client wrote them in.
fn canonical(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let mut out = Map::new();
            for k in keys {
                out.insert(k.clone(), canonical(&map[k]));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// SHA-256 (hex) of the canonical JSON of `arguments` without `approval_token`: what an
/// approval is bound to, and what the ledger records instead of the arguments.
pub fn arguments_hash(arguments: &Map<String, Value>) -> String {
    let mut args = arguments.clone();
    args.remove(APPROVAL_TOKEN);
    let text = canonical(&Value::Object(args)).to_string();
    let digest = Sha256::digest(text.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    // REQ-014-204 REQ-014-206
    #[test]
    fn one_tool_per_exposed_row_and_none_for_the_others() {
        let catalog = Catalog::from_method_table();
        for m in METHODS {
            let tool = catalog.get(&tool_name(m.name));
            assert_eq!(tool.is_some(), m.exposed, "{}", m.name);
            if let Some(t) = tool {
                assert_eq!(t.gated, m.mutates, "{}", m.name);
                assert_eq!(t.method, m.name);
                assert!(t.description.starts_with(m.summary));
                assert_eq!(t.input_schema["type"], "object", "{}", m.name);
            }
        }
        assert!(catalog.get("auth_authenticate").is_none());
        assert!(catalog.get("gateway_subscribe").is_none());
        let list = catalog.list();
        let names: Vec<&str> = list["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert_eq!(names.last(), Some(&APPROVE));
        assert_eq!(
            names.len(),
            METHODS.iter().filter(|m| m.exposed).count() + 1
        );
    }

    // REQ-014-206
    #[test]
    fn a_method_not_marked_read_only_is_gated() {
        fn h(
            _: crate::gateway::state::Call,
        ) -> futures::future::BoxFuture<'static, crate::gateway::methods::RpcResult> {
            Box::pin(async { Ok(json!({})) })
        }
        let rows = [Method {
            name: "thing.do",
            handler: h,
            scope: None,
            mutates: true,
            exposed: true,
            params_schema: "{\"type\":\"object\",\"additionalProperties\":false}",
            summary: "Do a thing.",
        }];
        let catalog = Catalog::from_methods(&rows);
        let tool = catalog.get("thing_do").expect("generated from the row");
        assert!(tool.gated);
        assert_eq!(
            tool.input_schema["properties"][APPROVAL_TOKEN]["type"],
            "string"
        );
        let list = catalog.list();
        let approve = &list["tools"][1];
        assert_eq!(approve["name"], APPROVE);
        assert_eq!(
            approve["inputSchema"]["properties"]["tool"]["enum"],
            json!(["thing_do"])
        );
    }

    // REQ-014-205
    #[test]
    fn the_arguments_hash_ignores_key_order_and_the_token() {
        let a: Map<String, Value> =
            serde_json::from_str(r#"{"target":"U:Ox","payload":{"b":1,"a":[{"y":1,"x":2}]}}"#)
                .expect("json");
        let b: Map<String, Value> = serde_json::from_str(
            r#"{"payload":{"a":[{"x":2,"y":1}],"b":1},"approval_token":"t","target":"U:Ox"}"#,
        )
        .expect("json");
        let c: Map<String, Value> =
            serde_json::from_str(r#"{"target":"U:Vz","payload":{"b":1,"a":[{"y":1,"x":2}]}}"#)
                .expect("json");
        assert_eq!(arguments_hash(&a), arguments_hash(&b));
        assert_ne!(arguments_hash(&a), arguments_hash(&c));
        assert_eq!(arguments_hash(&a).len(), 64);
    }
}
