//! Providers (spec 005 FR14, NFR10): registrations, every answered or failed call, and
//! quota exhaustion, as `provider.events`. The kernel counts tokens (the fold in
//! `state/providers.rs`); the call that reaches a provider's quota records
//! `quota_exhausted` in the same batch, so the next junior skips the provider.

use orchestrata_schemas::events::provider::{
    ProviderQuotaExhausted, ProviderRateLimited, ProviderRegistered, ProviderRequestCompleted,
    ProviderRequestFailed,
};
use orchestrata_schemas::events::EventRecord;

use super::{non_empty, Ctx};
use crate::kernel::state::ProviderUsage;
use crate::kernel::KernelError;

fn registered<'a>(cx: &'a Ctx<'_>, provider: &str) -> Result<&'a ProviderUsage, KernelError> {
    cx.state
        .provider(provider)
        .ok_or_else(|| KernelError::invalid("provider", format!("`{provider}` is not registered")))
}

/// `register_provider`: `registered` unless the last registration said the same.
pub(super) fn register(
    cx: &Ctx<'_>,
    provider: &str,
    kind: &str,
    models: &[String],
    quota_tokens: Option<i64>,
) -> Result<Vec<EventRecord>, KernelError> {
    non_empty("provider", provider)?;
    non_empty("kind", kind)?;
    if quota_tokens.is_some_and(|q| q < 0) {
        return Err(KernelError::invalid("quota_tokens", "must not be negative"));
    }
    let same = cx.state.provider(provider).is_some_and(|p| {
        p.kind == kind && p.models.as_slice() == models && p.quota_tokens == quota_tokens
    });
    if same {
        return Ok(Vec::new());
    }
    let event = ProviderRegistered {
        provider: provider.to_owned(),
        kind: kind.to_owned(),
        models: models.to_vec(),
        quota_tokens,
    };
    Ok(vec![cx.record(provider, event)])
}

/// What a provider answered, for [`usage`].
pub(super) struct Usage<'a> {
    pub provider: &'a str,
    pub request_id: &'a str,
    pub model: &'a str,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub latency_ms: i64,
}

/// `record_provider_usage`: `request_completed`; `quota_exhausted` when this call's
/// tokens reach the quota.
pub(super) fn usage(cx: &Ctx<'_>, u: &Usage<'_>) -> Result<Vec<EventRecord>, KernelError> {
    non_empty("request_id", u.request_id)?;
    if u.input_tokens < 0 || u.output_tokens < 0 || u.latency_ms < 0 {
        return Err(KernelError::invalid(
            "tokens",
            "token counts and latency must not be negative",
        ));
    }
    let account = registered(cx, u.provider)?;
    let mut events = vec![cx.record(
        u.provider,
        ProviderRequestCompleted {
            provider: u.provider.to_owned(),
            request_id: u.request_id.to_owned(),
            model: u.model.to_owned(),
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            latency_ms: u.latency_ms,
        },
    )];
    let used = account
        .used_tokens
        .saturating_add(u.input_tokens)
        .saturating_add(u.output_tokens);
    if !account.is_exhausted() && account.quota_tokens.is_some_and(|q| used >= q) {
        events.push(cx.record(
            u.provider,
            ProviderQuotaExhausted {
                provider: u.provider.to_owned(),
                used_tokens: used,
                quota_tokens: account.quota_tokens,
                reason: "counted".into(),
            },
        ));
    }
    Ok(events)
}

/// What went wrong with a call, for [`failure`].
pub(super) struct Failure<'a> {
    pub provider: &'a str,
    pub request_id: &'a str,
    pub model: &'a str,
    pub error: &'a str,
    pub retryable: bool,
    pub retry_after_ms: Option<i64>,
    pub quota_exhausted: bool,
}

/// `record_provider_failure`: `rate_limited` first when the provider asked us to wait,
/// then `request_failed`, then `quota_exhausted` when it said its quota is gone.
pub(super) fn failure(cx: &Ctx<'_>, f: &Failure<'_>) -> Result<Vec<EventRecord>, KernelError> {
    non_empty("request_id", f.request_id)?;
    non_empty("error", f.error)?;
    let account = registered(cx, f.provider)?;
    let mut events = Vec::with_capacity(3);
    if let Some(ms) = f.retry_after_ms {
        events.push(cx.record(
            f.provider,
            ProviderRateLimited {
                provider: f.provider.to_owned(),
                retry_after_ms: Some(ms.max(0)),
            },
        ));
    }
    events.push(cx.record(
        f.provider,
        ProviderRequestFailed {
            provider: f.provider.to_owned(),
            request_id: f.request_id.to_owned(),
            model: f.model.to_owned(),
            error: f.error.to_owned(),
            retryable: f.retryable,
        },
    ));
    if f.quota_exhausted && account.exhausted.is_none() {
        events.push(cx.record(
            f.provider,
            ProviderQuotaExhausted {
                provider: f.provider.to_owned(),
                used_tokens: account.used_tokens,
                quota_tokens: account.quota_tokens,
                reason: f.error.to_owned(),
            },
        ));
    }
    Ok(events)
}
