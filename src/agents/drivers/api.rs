//! [`ApiDriver`]: a junior behind OpenAI-compatible chat-completions endpoints.
//!
//! Providers are tried in the configured order. For each:
//! - the key comes from the environment variable the configuration names (never from
//!   the configuration itself);
//! - HTTP 429 is a rate limit: wait `Retry-After` (capped) and retry, up to
//!   `max_retries`; a 429 whose error code is `insufficient_quota` is quota exhaustion;
//! - the request has the task's timeout;
//! - tokens are counted against the provider's `quota_tokens` in a [`QuotaBook`]
//!   shared by every junior, so one junior's usage counts for the next.
//!
//! Quota exhaustion (reported or counted) falls back to the next provider; any other
//! failure ends the task.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;

use crate::agents::driver::{Driver, DriverError, Task};

/// One OpenAI-compatible provider.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ProviderConfig {
    /// A name for errors and quota accounting.
    pub name: String,
    /// Base URL; `/chat/completions` is appended (e.g. `https://api.openai.com/v1`).
    pub base_url: String,
    /// The model.
    pub model: String,
    /// The environment variable holding the API key (no key sent when unset/`None`).
    pub api_key_env: Option<String>,
    /// Tokens this provider may use in total (`None`: unlimited).
    pub quota_tokens: Option<u64>,
    /// Retries after HTTP 429.
    #[serde(default = "default_retries")]
    pub max_retries: u32,
    /// The longest `Retry-After` honoured, in milliseconds.
    #[serde(default = "default_backoff")]
    pub max_backoff_ms: u64,
}

fn default_retries() -> u32 {
    2
}

fn default_backoff() -> u64 {
    5_000
}

impl ProviderConfig {
    /// A provider at `base_url` serving `model`, no key, no quota, default retries.
    pub fn new(name: &str, base_url: &str, model: &str) -> Self {
        ProviderConfig {
            name: name.into(),
            base_url: base_url.into(),
            model: model.into(),
            api_key_env: None,
            quota_tokens: None,
            max_retries: default_retries(),
            max_backoff_ms: default_backoff(),
        }
    }
}

/// Tokens used per provider, shared by all API juniors of a senior (or a process).
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
    pub fn exhausted(&self, provider: &str) -> bool {
        self.with(|m| m.get(provider).is_some_and(|e| e.exhausted))
    }

    fn with<R>(&self, f: impl FnOnce(&mut HashMap<String, QuotaEntry>) -> R) -> R {
        let mut guard = match self.0.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        f(&mut guard)
    }

    fn add(&self, provider: &str, tokens: u64, quota: Option<u64>) {
        self.with(|m| {
            let e = m.entry(provider.to_owned()).or_default();
            e.used = e.used.saturating_add(tokens);
            if quota.is_some_and(|q| e.used >= q) {
                e.exhausted = true;
            }
        })
    }

    fn exhaust(&self, provider: &str) {
        self.with(|m| m.entry(provider.to_owned()).or_default().exhausted = true)
    }
}

/// See the module docs.
#[derive(Debug)]
pub struct ApiDriver {
    providers: Vec<ProviderConfig>,
    quota: QuotaBook,
    client: reqwest::Client,
    task: Option<Task>,
    used: Option<String>,
}

impl ApiDriver {
    /// A driver trying `providers` in order, counting tokens in `quota`.
    pub fn new(providers: Vec<ProviderConfig>, quota: QuotaBook) -> Self {
        ApiDriver {
            providers,
            quota,
            client: reqwest::Client::new(),
            task: None,
            used: None,
        }
    }

    /// The provider that answered the last task.
    pub fn answered_by(&self) -> Option<&str> {
        self.used.as_deref()
    }

    async fn ask(&self, p: &ProviderConfig, task: &Task) -> Result<String, DriverError> {
        let url = format!("{}/chat/completions", p.base_url.trim_end_matches('/'));
        let body = serde_json::json!({
            "model": p.model,
            "messages": [{"role": "user", "content": task.prompt}],
        });
        let key = p.api_key_env.as_ref().and_then(|v| std::env::var(v).ok());
        let mut attempt = 0;
        loop {
            let mut req = self.client.post(&url).json(&body).timeout(task.timeout);
            if let Some(key) = &key {
                req = req.bearer_auth(key);
            }
            let resp = req
                .send()
                .await
                .map_err(|e| request_error(e, task.timeout))?;
            let status = resp.status();
            if status.as_u16() == 429 {
                let retry_after_ms = resp
                    .headers()
                    .get(reqwest::header::RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse::<f64>().ok())
                    .map_or(1_000, |s| (s * 1000.0) as u64);
                let text = resp.text().await.unwrap_or_default();
                if text.contains("insufficient_quota") {
                    self.quota.exhaust(&p.name);
                    return Err(DriverError::QuotaExhausted {
                        provider: p.name.clone(),
                        reason: "the provider reported insufficient_quota".into(),
                    });
                }
                if attempt >= p.max_retries {
                    return Err(DriverError::RateLimited {
                        provider: p.name.clone(),
                        retry_after_ms,
                    });
                }
                attempt += 1;
                tokio::time::sleep(Duration::from_millis(retry_after_ms.min(p.max_backoff_ms)))
                    .await;
                continue;
            }
            let text = resp
                .text()
                .await
                .map_err(|e| request_error(e, task.timeout))?;
            if !status.is_success() {
                let end = text.len().min(500);
                return Err(DriverError::Crashed {
                    reason: format!(
                        "{}: HTTP {status}: {}",
                        p.name,
                        text.get(..end).unwrap_or("")
                    ),
                });
            }
            let parsed: Completion =
                serde_json::from_str(&text).map_err(|e| DriverError::Protocol {
                    reason: format!("{}: not a chat completion: {e}", p.name),
                })?;
            let tokens = parsed.usage.map_or(0, |u| u.total_tokens);
            self.quota.add(&p.name, tokens, p.quota_tokens);
            return parsed
                .choices
                .into_iter()
                .next()
                .and_then(|c| c.message.content)
                .ok_or_else(|| DriverError::Protocol {
                    reason: format!("{}: choices[0].message.content is missing", p.name),
                });
        }
    }
}

fn request_error(e: reqwest::Error, timeout: Duration) -> DriverError {
    if e.is_timeout() {
        DriverError::Timeout {
            after_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
        }
    } else {
        DriverError::Crashed {
            reason: format!("request failed: {e}"),
        }
    }
}

#[derive(Deserialize)]
struct Completion {
    choices: Vec<Choice>,
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Choice {
    message: Message,
}

#[derive(Deserialize)]
struct Message {
    content: Option<String>,
}

#[derive(Deserialize)]
struct Usage {
    total_tokens: u64,
}

#[async_trait]
impl Driver for ApiDriver {
    fn name(&self) -> String {
        match &self.used {
            Some(p) => format!("api:{p}"),
            None => "api".into(),
        }
    }

    async fn initialize(&mut self) -> Result<(), DriverError> {
        if self.providers.is_empty() {
            return Err(DriverError::Start {
                field: "providers",
                reason: "no provider configured".into(),
            });
        }
        for p in &self.providers {
            if !(p.base_url.starts_with("http://") || p.base_url.starts_with("https://")) {
                return Err(DriverError::Start {
                    field: "base_url",
                    reason: format!("{}: `{}` is not an http(s) URL", p.name, p.base_url),
                });
            }
        }
        Ok(())
    }

    async fn send_task(&mut self, task: &Task) -> Result<(), DriverError> {
        self.task = Some(task.clone());
        Ok(())
    }

    async fn get_response(&mut self) -> Result<String, DriverError> {
        let task = self.task.clone().ok_or_else(|| DriverError::State {
            reason: "get_response before send_task".into(),
        })?;
        let mut last = None;
        for p in &self.providers {
            if self.quota.exhausted(&p.name) {
                last = Some(DriverError::QuotaExhausted {
                    provider: p.name.clone(),
                    reason: format!("{} tokens used", self.quota.used(&p.name)),
                });
                continue;
            }
            match self.ask(p, &task).await {
                Ok(answer) => {
                    self.used = Some(p.name.clone());
                    return Ok(answer);
                }
                Err(e @ DriverError::QuotaExhausted { .. }) => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or(DriverError::State {
            reason: "no provider answered".into(),
        }))
    }

    async fn cleanup(&mut self) -> Result<(), DriverError> {
        self.task = None;
        Ok(())
    }
}
