//! Params validation against the JSON Schemas in `schemas/json/gateway/params/`, and
//! the result schemas of `schemas/json/gateway/results/`.
//!
//! The schema files are the contract other languages read; they are embedded at compile
//! time and compiled once per gateway. A params failure answers -32602 `invalid_params`
//! naming the offending field (its JSON pointer) and the schema's complaint.
//!
//! The result schemas ([`RESULT_SCHEMAS`], [`ResultSchemas`]) describe what each method
//! answers: for the methods of spec 014's contract, the contract's `result` (answers may
//! carry more fields; every required one is there with the contract's type); for the
//! methods this gateway adds, what it answers. Tests validate every answer against them.

use std::collections::HashMap;

use jsonschema::Validator;
use serde_json::Value;

use super::error::RpcError;

/// The result schema of a method: `(method, schema text)`.
macro_rules! results {
    ($($name:literal),* $(,)?) => {
        /// Every method's result schema text, embedded from
        /// `schemas/json/gateway/results/<method>.schema.json`.
        pub static RESULT_SCHEMAS: &[(&str, &str)] = &[
            $(($name, include_str!(concat!(
                "../../schemas/json/gateway/results/",
                $name,
                ".schema.json"
            ))),)*
        ];
    };
}

results![
    "auth.authenticate",
    "gateway.info",
    "gateway.ping",
    "gateway.clients",
    "gateway.replay",
    "gateway.subscribe",
    "gateway.unsubscribe",
    "cxp.subscribe",
    "cxp.unsubscribe",
    "config.get",
    "cxp.send",
    "cxp.status",
    "cxp.ack",
    "cxp.work",
    "volk.list",
    "volk.get",
    "volk.register",
    "volk.deregister",
    "workflow.start",
    "workflow.pause",
    "workflow.resume",
    "workflow.cancel",
    "workflow.get",
    "agents.escalations",
    "agents.resolve_escalation",
    "agents.delegate",
    "agents.spawn",
    "agents.assign",
    "agents.terminate",
    "session.list",
    "session.get",
    "session.open",
    "session.close",
    "session.update_context",
    "session.assert_fact",
    "session.report_error",
    "session.portfolio.stats",
    "governance.query",
    "governance.evaluate",
    "governance.rules",
    "knowledge.nodes",
    "knowledge.relationships",
    "knowledge.query",
];

/// The result schema text of `method`, if it has one (every method of the table does).
pub fn result_schema(method: &str) -> Option<&'static str> {
    RESULT_SCHEMAS
        .iter()
        .find(|(name, _)| *name == method)
        .map(|(_, text)| *text)
}

/// Compiled result schemas, by method name: what a client (or a test) checks an answer
/// against.
pub struct ResultSchemas {
    validators: HashMap<&'static str, Validator>,
}

impl ResultSchemas {
    /// Compiles every schema of [`RESULT_SCHEMAS`].
    pub fn compile() -> Result<Self, SchemaError> {
        let mut validators = HashMap::new();
        for (method, text) in RESULT_SCHEMAS {
            validators.insert(*method, compile_one(method, text)?);
        }
        Ok(ResultSchemas { validators })
    }

    /// Checks `result`, the answer of `method`: `Err` lists every violation (JSON
    /// pointer and complaint), or says the method has no result schema.
    pub fn validate(&self, method: &str, result: &Value) -> Result<(), String> {
        let validator = self
            .validators
            .get(method)
            .ok_or_else(|| format!("`{method}` has no result schema"))?;
        let errors: Vec<String> = validator
            .iter_errors(result)
            .map(|e| format!("{}: {e}", e.instance_path()))
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(format!("`{method}` result: {}", errors.join("; ")))
        }
    }
}

/// Parses and compiles one schema (formats checked).
fn compile_one(method: &str, text: &str) -> Result<Validator, SchemaError> {
    let fail = |reason: String| SchemaError {
        method: method.to_owned(),
        reason,
    };
    let schema: Value = serde_json::from_str(text).map_err(|e| fail(e.to_string()))?;
    jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .map_err(|e| fail(e.to_string()))
}

/// Compiled params schemas, by method name.
pub struct ParamsSchemas {
    validators: HashMap<&'static str, Validator>,
}

/// A schema file of the contract failed to compile (a build defect, caught by tests).
#[derive(Debug, thiserror::Error)]
#[error("schema of `{method}` does not compile: {reason}")]
pub struct SchemaError {
    /// The method.
    pub method: String,
    /// Why.
    pub reason: String,
}

impl ParamsSchemas {
    /// Compiles `(method, schema text)` pairs.
    pub fn compile<'a>(
        schemas: impl IntoIterator<Item = (&'static str, &'a str)>,
    ) -> Result<Self, SchemaError> {
        let mut validators = HashMap::new();
        for (method, text) in schemas {
            validators.insert(method, compile_one(method, text)?);
        }
        Ok(ParamsSchemas { validators })
    }

    /// Validates `params` of `method` (methods without a schema accept anything).
    /// `null` params are checked as `{}` unless the schema accepts `null` itself.
    pub fn validate(&self, method: &str, params: &Value) -> Result<(), RpcError> {
        let Some(validator) = self.validators.get(method) else {
            return Ok(());
        };
        let empty = Value::Object(Default::default());
        let instance = if params.is_null() && !validator.is_valid(params) {
            &empty
        } else {
            params
        };
        if let Some(error) = validator.iter_errors(instance).next() {
            let pointer = error.instance_path().to_string();
            let field = if pointer.is_empty() {
                "params".to_owned()
            } else {
                format!("params{}", pointer.replace('/', "."))
            };
            return Err(
                RpcError::invalid_params("invalid_params", format!("{field}: {error}"))
                    .with("field", field),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gateway::methods::METHODS;

    // ISSUE-14: the contract as written — every method has a result schema, and every
    // result schema names a method.
    #[test]
    fn every_method_has_a_compiling_result_schema() {
        let schemas = ResultSchemas::compile().expect("result schemas compile");
        for m in METHODS {
            assert!(
                result_schema(m.name).is_some(),
                "{} has no result schema",
                m.name
            );
        }
        for (name, _) in RESULT_SCHEMAS {
            assert!(
                METHODS.iter().any(|m| m.name == *name),
                "result schema of unknown method {name}"
            );
        }
        assert!(schemas
            .validate("gateway.ping", &serde_json::json!({}))
            .is_err());
        assert!(schemas.validate("no.such", &serde_json::json!({})).is_err());
    }
}
