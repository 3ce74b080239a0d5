//! What the kernel knows of each LLM provider, folded from `provider.events`: its quota,
//! the tokens counted against it since it was registered, and whether it is exhausted.
//! API juniors read it before each call (an exhausted provider is skipped, the next one
//! in the configured order is asked), so quota use survives restarts and is rebuilt
//! from the log like everything else the kernel holds.

use orchestrata_schemas::events::Event;

use super::KernelState;

/// One provider's quota account.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProviderUsage {
    /// Protocol of the provider (`openai`).
    pub kind: String,
    /// Models it serves.
    pub models: Vec<String>,
    /// Its quota in tokens (`None`: unlimited).
    pub quota_tokens: Option<i64>,
    /// Tokens counted since the registration that set the quota.
    pub used_tokens: i64,
    /// Requests answered since then.
    pub requests: u64,
    /// Requests failed since then.
    pub failures: u64,
    /// Why it is exhausted, once a `quota_exhausted` was recorded.
    pub exhausted: Option<String>,
}

impl ProviderUsage {
    /// Whether calls must skip it: exhaustion recorded, or its quota reached.
    pub fn is_exhausted(&self) -> bool {
        self.exhausted.is_some() || self.quota_tokens.is_some_and(|q| self.used_tokens >= q)
    }
}

impl KernelState {
    /// A registered provider's account.
    pub fn provider(&self, name: &str) -> Option<&ProviderUsage> {
        self.providers.get(name)
    }

    /// Folds a `provider.events` event (others are ignored).
    pub(super) fn apply_provider(&mut self, event: &Event) {
        match event {
            Event::ProviderRegistered(e) => {
                let account = self.providers.entry(e.provider.clone()).or_default();
                if account.quota_tokens != e.quota_tokens {
                    // A new quota starts a new account.
                    *account = ProviderUsage::default();
                    account.quota_tokens = e.quota_tokens;
                }
                account.kind = e.kind.clone();
                account.models = e.models.clone();
            }
            Event::ProviderRequestCompleted(e) => {
                if let Some(a) = self.providers.get_mut(&e.provider) {
                    a.used_tokens = a
                        .used_tokens
                        .saturating_add(e.input_tokens.max(0))
                        .saturating_add(e.output_tokens.max(0));
                    a.requests += 1;
                }
            }
            Event::ProviderRequestFailed(e) => {
                if let Some(a) = self.providers.get_mut(&e.provider) {
                    a.failures += 1;
                }
            }
            Event::ProviderQuotaExhausted(e) => {
                if let Some(a) = self.providers.get_mut(&e.provider) {
                    a.exhausted = Some(e.reason.clone());
                }
            }
            _ => {}
        }
    }
}
