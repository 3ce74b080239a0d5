//! [`AgentError`]: why a coordination step failed, naming the field and the reason.

use crate::kernel::KernelError;

/// Errors of the coordination layer. Kernel refusals (validation, governance denials)
/// pass through unchanged in [`AgentError::Kernel`].
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The kernel refused or failed the command.
    #[error(transparent)]
    Kernel(#[from] KernelError),
    /// No live agent has this alias.
    #[error("{field}: no live agent `{alias}`")]
    UnknownAgent {
        /// The field naming it.
        field: &'static str,
        /// The alias.
        alias: String,
    },
    /// Configuration is invalid.
    #[error("{field}: {reason}")]
    Config {
        /// The configuration key.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// Input is invalid.
    #[error("{field}: {reason}")]
    Invalid {
        /// The field.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// No Volk alias is free for a new junior.
    #[error("alias: every Volk alias is in use")]
    AliasesExhausted,
}

impl AgentError {
    /// An [`AgentError::Invalid`].
    pub fn invalid(field: &'static str, reason: impl Into<String>) -> Self {
        AgentError::Invalid {
            field,
            reason: reason.into(),
        }
    }
}
