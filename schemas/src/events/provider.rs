//! Events of the `provider.events` stream.
//!
//! LLM / driver provider lifecycle.

use super::types::Health;
use serde::{Deserialize, Serialize};

/// A provider became available.
///
/// Stream `provider.events`, event type `registered`, Avro `schemas/avro/provider.events.ProviderRegistered.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderRegistered {
    /// Provider name.
    pub provider: String,
    /// Provider kind, e.g. `anthropic`, `local`.
    pub kind: String,
    /// Models it serves.
    pub models: Vec<String>,
    /// Tokens it may use in total (`None`: unlimited). A registration with another
    /// quota than the last one starts the provider afresh: an exhaustion recorded
    /// before it no longer counts (the operator raised or reset the quota).
    #[serde(default)]
    pub quota_tokens: Option<i64>,
}

/// A request was sent to a provider.
///
/// Stream `provider.events`, event type `request_started`, Avro `schemas/avro/provider.events.ProviderRequestStarted.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderRequestStarted {
    /// Provider name.
    pub provider: String,
    /// The request.
    pub request_id: String,
    /// Model asked.
    pub model: String,
    /// The Volk it is for.
    pub volk: Option<String>,
}

/// A provider answered.
///
/// Stream `provider.events`, event type `request_completed`, Avro `schemas/avro/provider.events.ProviderRequestCompleted.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderRequestCompleted {
    /// Provider name.
    pub provider: String,
    /// The request.
    pub request_id: String,
    /// Model.
    pub model: String,
    /// Tokens sent.
    pub input_tokens: i64,
    /// Tokens received.
    pub output_tokens: i64,
    /// Time to the full answer.
    pub latency_ms: i64,
}

/// A provider request failed.
///
/// Stream `provider.events`, event type `request_failed`, Avro `schemas/avro/provider.events.ProviderRequestFailed.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderRequestFailed {
    /// Provider name.
    pub provider: String,
    /// The request.
    pub request_id: String,
    /// Model.
    pub model: String,
    /// What went wrong.
    pub error: String,
    /// Whether retrying may help.
    pub retryable: bool,
}

/// A provider asked us to slow down.
///
/// Stream `provider.events`, event type `rate_limited`, Avro `schemas/avro/provider.events.ProviderRateLimited.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderRateLimited {
    /// Provider name.
    pub provider: String,
    /// How long to wait, if said.
    pub retry_after_ms: Option<i64>,
}

/// A provider's health changed.
///
/// Stream `provider.events`, event type `health_changed`, Avro `schemas/avro/provider.events.ProviderHealthChanged.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderHealthChanged {
    /// Provider name.
    pub provider: String,
    /// Before.
    pub old: Health,
    /// After.
    pub new: Health,
    /// What was observed.
    pub details: Option<String>,
}

/// A provider's quota is used up: calls go to the next provider until it is registered
/// again with another quota.
///
/// Stream `provider.events`, event type `quota_exhausted`, Avro `schemas/avro/provider.events.ProviderQuotaExhausted.avsc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderQuotaExhausted {
    /// Provider name.
    pub provider: String,
    /// Tokens counted against it since its registration.
    pub used_tokens: i64,
    /// Its quota, if one is configured.
    pub quota_tokens: Option<i64>,
    /// Why: `counted` (the configured quota was reached) or what the provider said.
    pub reason: String,
}
