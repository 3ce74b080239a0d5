//! Where API juniors keep each provider's account: [`ProviderLedger`].
//!
//! Every call an [`super::api::ApiDriver`] makes ends in one [`CallRecord`] (answered
//! with its token usage, or failed and why), and before each call the driver asks the
//! ledger whether the provider is exhausted. Two ledgers:
//! - [`QuotaBook`]: in memory, for a driver used as a library (gone with the process);
//! - `crate::agents::providers::KernelLedger`: every record is a kernel command and so
//!   a `provider.events` event; the kernel's fold answers `exhausted`, so quotas
//!   survive restarts and rebuild from the log (what `orchestrata up` uses).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use crate::agents::driver::DriverError;

/// How a call to a provider ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallOutcome {
    /// The provider answered, reporting this usage.
    Answered {
        /// Prompt tokens.
        input_tokens: u64,
        /// Completion tokens.
        output_tokens: u64,
    },
    /// The call failed.
    Failed {
        /// What went wrong (HTTP status and the start of the body, or the transport error).
        error: String,
        /// Whether the same call may succeed later (429, 5xx, timeouts).
        retryable: bool,
        /// What the provider asked us to wait (HTTP 429 `Retry-After`).
        retry_after_ms: Option<u64>,
        /// The provider said its quota is used up (`insufficient_quota`).
        quota_exhausted: bool,
    },
}

/// One call, as the ledger records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallRecord {
    /// The provider's configured name.
    pub provider: String,
    /// Its configured quota (`None`: unlimited); the in-memory book counts against it.
    pub quota_tokens: Option<u64>,
    /// Unique per HTTP request.
    pub request_id: String,
    /// The model asked.
    pub model: String,
    /// From sending the request to the end of the answer.
    pub latency_ms: u64,
    /// How it ended.
    pub outcome: CallOutcome,
}

/// See the module docs.
#[async_trait]
pub trait ProviderLedger: Send + Sync + std::fmt::Debug {
    /// `Some(why)` when `provider` must not be called: its quota is used up.
    async fn exhausted(&self, provider: &str) -> Result<Option<String>, DriverError>;
    /// Records one call.
    async fn record(&self, call: CallRecord) -> Result<(), DriverError>;
}

/// Tokens used per provider, in memory, shared by every driver holding a clone.
#[derive(Debug, Default, Clone)]
pub struct QuotaBook(Arc<Mutex<HashMap<String, QuotaEntry>>>);

#[derive(Debug, Default, Clone, Copy)]
struct QuotaEntry {
    used: u64,
    exhausted: bool,
}

impl QuotaBook {
    /// Tokens `provider` has used so far.
    pub fn used(&self, provider: &str) -> u64 {
        self.with(|m| m.get(provider).map_or(0, |e| e.used))
    }

    /// Whether `provider` reported or reached exhaustion.
    pub fn is_exhausted(&self, provider: &str) -> bool {
        self.with(|m| m.get(provider).is_some_and(|e| e.exhausted))
    }

    fn with<R>(&self, f: impl FnOnce(&mut HashMap<String, QuotaEntry>) -> R) -> R {
        let mut guard = match self.0.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        f(&mut guard)
    }
}

#[async_trait]
impl ProviderLedger for QuotaBook {
    async fn exhausted(&self, provider: &str) -> Result<Option<String>, DriverError> {
        Ok(self
            .is_exhausted(provider)
            .then(|| format!("{} tokens used", self.used(provider))))
    }

    async fn record(&self, call: CallRecord) -> Result<(), DriverError> {
        self.with(|m| {
            let e = m.entry(call.provider.clone()).or_default();
            match call.outcome {
                CallOutcome::Answered {
                    input_tokens,
                    output_tokens,
                } => {
                    e.used = e
                        .used
                        .saturating_add(input_tokens)
                        .saturating_add(output_tokens);
                    if call.quota_tokens.is_some_and(|q| e.used >= q) {
                        e.exhausted = true;
                    }
                }
                CallOutcome::Failed {
                    quota_exhausted, ..
                } => e.exhausted |= quota_exhausted,
            }
        });
        Ok(())
    }
}
