//! Why governance could not do what was asked.

/// Errors of the governance engine and its policies.
#[derive(Debug, thiserror::Error)]
pub enum GovernanceError {
    /// A policy file or directory could not be read.
    #[error("policy {path}: cannot read it: {source}")]
    PolicyRead {
        /// The file or directory.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A policy directory holds no `.pl` file.
    #[error("policy {path}: no .pl file in it")]
    PolicyEmpty {
        /// The directory.
        path: String,
    },
    /// A policy file does not load; the previous policy stays in force.
    #[error("policy file {file}, line {line}: {message}")]
    PolicyInvalid {
        /// The file, e.g. `gateway.pl`.
        file: String,
        /// 1-based line of the offending clause (0 if unknown).
        line: u64,
        /// The Prolog error.
        message: String,
    },
    /// A request field cannot be used.
    #[error("governance request field {field}: {reason}")]
    InvalidRequest {
        /// The field, e.g. `subject`.
        field: &'static str,
        /// Why.
        reason: String,
    },
    /// The engine thread is gone, panicked or did not answer in time.
    #[error("governance engine unavailable: {0}")]
    EngineUnavailable(String),
    /// Evaluating the policy raised a Prolog error.
    #[error("prolog error: {0}")]
    Prolog(String),
    /// The event log failed.
    #[error("event log: {0}")]
    Log(#[from] crate::log::LogError),
    /// The kernel's writer, which appends this service's records, could not append
    /// this one (see `Governance::record_through`); nothing of it is acknowledged.
    #[error("the kernel's writer could not record it: {0}")]
    NotRecorded(String),
    /// The facts checkpoint could not be read or written.
    #[error("facts checkpoint {path}: {reason}")]
    Checkpoint {
        /// The checkpoint file.
        path: String,
        /// Why.
        reason: String,
    },
}
