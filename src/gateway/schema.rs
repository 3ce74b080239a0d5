//! Params validation against the JSON Schemas in `schemas/json/gateway/params/`.
//!
//! The schema files are the contract other languages read; they are embedded at compile
//! time and compiled once per gateway. A failure answers -32602 `invalid_params` naming
//! the offending field (its JSON pointer) and the schema's complaint.

use std::collections::HashMap;

use jsonschema::Validator;
use serde_json::Value;

use super::error::RpcError;

/// Compiled params schemas, by method name.
pub struct ParamsSchemas {
    validators: HashMap<&'static str, Validator>,
}

/// A schema file of the contract failed to compile (a build defect, caught by tests).
#[derive(Debug, thiserror::Error)]
#[error("params schema of `{method}` does not compile: {reason}")]
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
            let fail = |reason: String| SchemaError {
                method: method.to_owned(),
                reason,
            };
            let schema: Value = serde_json::from_str(text).map_err(|e| fail(e.to_string()))?;
            let validator = jsonschema::options()
                .should_validate_formats(true)
                .build(&schema)
                .map_err(|e| fail(e.to_string()))?;
            validators.insert(method, validator);
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
