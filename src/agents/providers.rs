//! Provider accounts on the log (spec 005 FR14, NFR10): [`KernelLedger`] is the
//! [`ProviderLedger`] of API juniors under `orchestrata up`, and [`register`] makes the
//! configured providers known to the kernel at start.
//!
//! Every call a junior makes is a kernel command (`record_provider_usage` /
//! `record_provider_failure`) and so `provider.events` (`request_completed`,
//! `request_failed`, `rate_limited`, `quota_exhausted`); whether a provider is exhausted
//! is read from the kernel's fold of those events. A restart folds them again: a
//! provider exhausted before the stop stays skipped after it, until `agents.providers`
//! gives it another quota (a new `registered` event starts a new account).

use async_trait::async_trait;
use orchestrata_schemas::events::{Command, CommandKind};
use uuid::Uuid;

use super::driver::DriverError;
use super::drivers::api::ProviderConfig;
use super::drivers::quota::{CallOutcome, CallRecord, ProviderLedger};
use crate::kernel::{Kernel, KernelError};

/// Records calls as kernel commands issued by `issuer` (the senior whose junior calls).
#[derive(Debug, Clone)]
pub struct KernelLedger {
    kernel: Kernel,
    issuer: String,
}

impl KernelLedger {
    /// A ledger over `kernel`, commands issued by `issuer`.
    pub fn new(kernel: Kernel, issuer: &str) -> Self {
        KernelLedger {
            kernel,
            issuer: issuer.to_owned(),
        }
    }
}

fn ledger_error(e: KernelError) -> DriverError {
    DriverError::State {
        reason: format!("provider ledger: {e}"),
    }
}

fn tokens(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[async_trait]
impl ProviderLedger for KernelLedger {
    async fn exhausted(&self, provider: &str) -> Result<Option<String>, DriverError> {
        let name = provider.to_owned();
        let account = self
            .kernel
            .read(move |s| s.provider(&name).cloned())
            .await
            .map_err(ledger_error)?;
        let account = account.ok_or_else(|| DriverError::State {
            reason: format!("provider `{provider}` is not registered with the kernel"),
        })?;
        Ok(account.is_exhausted().then(|| {
            let why = account
                .exhausted
                .clone()
                .unwrap_or_else(|| "counted".into());
            match account.quota_tokens {
                Some(q) => format!("{why}: {} of {q} tokens used", account.used_tokens),
                None => why,
            }
        }))
    }

    async fn record(&self, call: CallRecord) -> Result<(), DriverError> {
        let action = match call.outcome {
            CallOutcome::Answered {
                input_tokens,
                output_tokens,
            } => CommandKind::RecordProviderUsage {
                provider: call.provider,
                request_id: call.request_id,
                model: call.model,
                input_tokens: tokens(input_tokens),
                output_tokens: tokens(output_tokens),
                latency_ms: tokens(call.latency_ms),
            },
            CallOutcome::Failed {
                error,
                retryable,
                retry_after_ms,
                quota_exhausted,
            } => CommandKind::RecordProviderFailure {
                provider: call.provider,
                request_id: call.request_id,
                model: call.model,
                error,
                retryable,
                retry_after_ms: retry_after_ms.map(tokens),
                quota_exhausted,
            },
        };
        let command = Command {
            id: Uuid::new_v4(),
            principal: None,
            issuer: self.issuer.clone(),
            action,
        };
        self.kernel
            .execute(command)
            .await
            .map(drop)
            .map_err(ledger_error)
    }
}

/// Registers every configured provider with the kernel (`registered` for a new one or
/// a changed model or quota; nothing for one the log already knows as configured).
/// Returns how many registrations were recorded.
pub async fn register(
    kernel: &Kernel,
    issuer: &str,
    providers: &[ProviderConfig],
) -> Result<usize, KernelError> {
    let mut recorded = 0;
    for p in providers {
        let command = Command {
            id: Uuid::new_v4(),
            principal: None,
            issuer: issuer.to_owned(),
            action: CommandKind::RegisterProvider {
                provider: p.name.clone(),
                kind: "openai".into(),
                models: vec![p.model.clone()],
                quota_tokens: p.quota_tokens.map(tokens),
            },
        };
        if !kernel.execute(command).await?.events.is_empty() {
            recorded += 1;
        }
    }
    Ok(recorded)
}
