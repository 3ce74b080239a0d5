//! Answers checked against the gateway contract's result schemas
//! (`schemas/json/gateway/results/`), as a client reading the spec would check them.

use orchestrata::gateway::schema::ResultSchemas;
use serde_json::Value;

/// The `result` of JSON-RPC `response` to `method`, validated against the method's
/// result schema; panics (failing the test) on an error answer or a schema violation.
pub fn result(schemas: &ResultSchemas, method: &str, response: &Value) -> Value {
    assert_eq!(response["jsonrpc"], "2.0", "{response}");
    let result = response
        .get("result")
        .unwrap_or_else(|| panic!("{method} failed: {response}"));
    if let Err(e) = schemas.validate(method, result) {
        panic!("{e}\n{result:#}");
    }
    result.clone()
}
