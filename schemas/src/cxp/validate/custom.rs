//! Custom validators (US-007-018..021): functions registered per field, run as chains.
//!
//! A [`ValidatorRegistry`] first runs the built-in [`CxpPacket::validate`], then, for each
//! field in registration order, that field's validators in the order they were added; the
//! first refusal stops the chain and is reported as [`CxpError::Validator`] naming the
//! field, the validator and its message.

use std::sync::Arc;

use super::super::error::CxpError;
use super::super::packet::CxpPacket;

/// A custom check: `Ok(())` accepts, `Err(message)` refuses.
pub type ValidatorFn = Arc<dyn Fn(&CxpPacket) -> Result<(), String> + Send + Sync>;

struct Registered {
    field: String,
    name: String,
    check: ValidatorFn,
}

/// Custom validators keyed by field, each field's validators forming a chain.
#[derive(Default, Clone)]
pub struct ValidatorRegistry {
    chains: Vec<Arc<Registered>>,
}

impl std::fmt::Debug for ValidatorRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.chains.iter().map(|r| (&r.field, &r.name)))
            .finish()
    }
}

impl ValidatorRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Register `check` under `name` for `field`; it runs after the validators already
    /// registered for that field.
    pub fn register(
        &mut self,
        field: impl Into<String>,
        name: impl Into<String>,
        check: impl Fn(&CxpPacket) -> Result<(), String> + Send + Sync + 'static,
    ) -> &mut Self {
        self.chains.push(Arc::new(Registered {
            field: field.into(),
            name: name.into(),
            check: Arc::new(check),
        }));
        self
    }

    /// Names of the validators registered for `field`, in chain order.
    pub fn chain(&self, field: &str) -> Vec<&str> {
        self.chains
            .iter()
            .filter(|r| r.field == field)
            .map(|r| r.name.as_str())
            .collect()
    }

    /// Built-in validation, then every chain; the first failure is returned.
    pub fn validate(&self, packet: &CxpPacket) -> Result<(), CxpError> {
        packet.validate()?;
        for r in &self.chains {
            (r.check)(packet).map_err(|reason| CxpError::Validator {
                field: r.field.clone(),
                validator: r.name.clone(),
                reason,
            })?;
        }
        Ok(())
    }
}
