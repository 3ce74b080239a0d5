//! [`ApiDriver`]: a junior behind OpenAI-compatible chat-completions endpoints (the
//! protocol OpenAI, vLLM, llama.cpp's server, Ollama and LiteLLM serve).
//!
//! Providers are tried in the configured order. For each:
//! - a provider the [`ProviderLedger`] says is exhausted is skipped;
//! - the key comes from the environment variable the configuration names, else from
//!   the configuration's `api_key`, sent as a bearer token;
//! - HTTP 429 is a rate limit: wait `Retry-After` (capped at `max_backoff_ms`) and retry,
//!   up to `max_retries`; a 429 whose error code is `insufficient_quota` is exhaustion;
//! - each request has the task's timeout;
//! - every request that ends — answered with its `usage`, or failed (429, 401, 5xx, a
//!   timeout, an answer that is not a chat completion) — is recorded in the ledger, so
//!   the tokens count against the provider's quota for every later junior.
//!
//! A provider that fails (exhausted, rate-limited past its retries, refusing the key,
//! erroring) hands the task to the next one. When none answers, the task fails with the
//! last provider's error — [`DriverError::QuotaExhausted`] when every provider was
//! exhausted, which the junior's senior escalates to the human queue (005 NFR10).

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde::Deserialize;
use uuid::Uuid;

pub use super::quota::QuotaBook;
use super::quota::{CallOutcome, CallRecord, ProviderLedger};
use crate::agents::driver::{Driver, DriverError, Task};

/// One OpenAI-compatible provider (an entry of `agents.providers`).
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// A name for errors, events and quota accounting.
    pub name: String,
    /// Base URL; `/chat/completions` is appended (e.g. `https://api.openai.com/v1`).
    pub base_url: String,
    /// The model.
    pub model: String,
    /// The environment variable holding the API key; when it is set, it wins over
    /// `api_key`.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// The API key itself (prefer `api_key_env`: a configuration file is easier to
    /// leak than an environment). Never printed: `Debug` and `config.get` redact it.
    #[serde(default)]
    pub api_key: Option<String>,
    /// Tokens this provider may use in total (`None`: unlimited).
    #[serde(default)]
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
            api_key: None,
            quota_tokens: None,
            max_retries: default_retries(),
            max_backoff_ms: default_backoff(),
        }
    }

    /// The key to send: the environment variable's value, else the configured key.
    pub fn key(&self) -> Option<String> {
        self.api_key_env
            .as_ref()
            .and_then(|v| std::env::var(v).ok())
            .or_else(|| self.api_key.clone())
    }

    /// Checks what can be checked without calling: a name and an http(s) URL.
    pub fn validate(&self) -> Result<(), DriverError> {
        if self.name.trim().is_empty() {
            return Err(DriverError::Start {
                field: "name",
                reason: "a provider needs a name".into(),
            });
        }
        if !(self.base_url.starts_with("http://") || self.base_url.starts_with("https://")) {
            return Err(DriverError::Start {
                field: "base_url",
                reason: format!("{}: `{}` is not an http(s) URL", self.name, self.base_url),
            });
        }
        Ok(())
    }
}

impl std::fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderConfig")
            .field("name", &self.name)
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key_env", &self.api_key_env)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("quota_tokens", &self.quota_tokens)
            .field("max_retries", &self.max_retries)
            .field("max_backoff_ms", &self.max_backoff_ms)
            .finish()
    }
}

/// See the module docs.
#[derive(Debug)]
pub struct ApiDriver {
    providers: Vec<ProviderConfig>,
    ledger: Arc<dyn ProviderLedger>,
    client: reqwest::Client,
    task: Option<Task>,
    used: Option<String>,
    max_body: u64,
}

impl ApiDriver {
    /// A driver trying `providers` in order, counting tokens in the in-memory `quota`.
    pub fn new(providers: Vec<ProviderConfig>, quota: QuotaBook) -> Self {
        Self::with_ledger(providers, Arc::new(quota))
    }

    /// A driver trying `providers` in order, recording every call in `ledger`.
    pub fn with_ledger(providers: Vec<ProviderConfig>, ledger: Arc<dyn ProviderLedger>) -> Self {
        ApiDriver {
            providers,
            ledger,
            client: shared_client(),
            task: None,
            used: None,
            max_body: super::cli::MAX_OUTPUT_BYTES,
        }
    }

    /// Reads provider bodies up to `bytes`; a longer one fails `output_too_large`.
    pub fn max_body_bytes(mut self, bytes: u64) -> Self {
        self.max_body = bytes;
        self
    }

    /// The provider that answered the last task.
    pub fn answered_by(&self) -> Option<&str> {
        self.used.as_deref()
    }

    async fn record(&self, p: &ProviderConfig, started: Instant, outcome: CallOutcome) {
        let call = CallRecord {
            provider: p.name.clone(),
            quota_tokens: p.quota_tokens,
            request_id: Uuid::new_v4().to_string(),
            model: p.model.clone(),
            latency_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            outcome,
        };
        if let Err(e) = self.ledger.record(call).await {
            // The answer stands; the account misses one call, and says so.
            tracing::warn!(provider = %p.name, error = %e, "provider call not recorded");
        }
    }

    async fn failed(
        &self,
        p: &ProviderConfig,
        started: Instant,
        error: DriverError,
        retryable: bool,
    ) -> DriverError {
        let outcome = CallOutcome::Failed {
            error: error.to_string(),
            retryable,
            retry_after_ms: None,
            quota_exhausted: matches!(error, DriverError::QuotaExhausted { .. }),
        };
        self.record(p, started, outcome).await;
        error
    }

    async fn ask(&self, p: &ProviderConfig, task: &Task) -> Result<String, DriverError> {
        let url = format!("{}/chat/completions", p.base_url.trim_end_matches('/'));
        let body = serde_json::json!({
            "model": p.model,
            "messages": [{"role": "user", "content": task.prompt}],
        });
        let key = p.key();
        let mut attempt = 0;
        loop {
            let started = Instant::now();
            let mut req = self.client.post(&url).json(&body).timeout(task.timeout);
            if let Some(key) = &key {
                req = req.bearer_auth(key);
            }
            let resp = match req.send().await {
                Ok(r) => r,
                Err(e) => {
                    return Err(self
                        .failed(p, started, request_error(e, task.timeout), true)
                        .await)
                }
            };
            let status = resp.status();
            if status.as_u16() == 429 {
                let retry_after_ms = resp
                    .headers()
                    .get(reqwest::header::RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse::<f64>().ok())
                    .filter(|s| s.is_finite() && *s >= 0.0)
                    .map_or(1_000, |s| (s * 1000.0).min(u64::MAX as f64) as u64);
                let text = read_body(resp, self.max_body).await.unwrap_or_default();
                if text.contains("insufficient_quota") {
                    let e = DriverError::QuotaExhausted {
                        provider: p.name.clone(),
                        reason: "the provider reported insufficient_quota".into(),
                    };
                    return Err(self.failed(p, started, e, false).await);
                }
                let outcome = CallOutcome::Failed {
                    error: format!("{}: HTTP 429", p.name),
                    retryable: true,
                    retry_after_ms: Some(retry_after_ms),
                    quota_exhausted: false,
                };
                self.record(p, started, outcome).await;
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
            let text = match read_body(resp, self.max_body).await {
                Ok(t) => t,
                Err(Body::TooLarge) => {
                    let e = DriverError::OutputTooLarge {
                        limit: self.max_body,
                    };
                    return Err(self.failed(p, started, e, false).await);
                }
                Err(Body::Failed(e)) => {
                    return Err(self
                        .failed(p, started, request_error(e, task.timeout), true)
                        .await)
                }
            };
            if !status.is_success() {
                let end = text.floor_char_boundary(500);
                let e = DriverError::Crashed {
                    reason: format!("{}: HTTP {status}: {}", p.name, &text[..end]),
                };
                return Err(self.failed(p, started, e, status.is_server_error()).await);
            }
            let parsed: Completion = match serde_json::from_str(&text) {
                Ok(c) => c,
                Err(e) => {
                    let e = DriverError::Protocol {
                        reason: format!("{}: not a chat completion: {e}", p.name),
                    };
                    return Err(self.failed(p, started, e, false).await);
                }
            };
            let usage = parsed.usage.unwrap_or_default();
            let (input_tokens, output_tokens) = match (usage.prompt_tokens, usage.completion_tokens)
            {
                (None, None) => (0, usage.total_tokens.unwrap_or(0)),
                (i, o) => (i.unwrap_or(0), o.unwrap_or(0)),
            };
            let answered = CallOutcome::Answered {
                input_tokens,
                output_tokens,
            };
            self.record(p, started, answered).await;
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

/// Why a provider's body could not be read.
enum Body {
    /// It was longer than the cap.
    TooLarge,
    /// The transfer failed.
    Failed(reqwest::Error),
}

/// The body of `resp` as text, read chunk by chunk up to `cap` bytes (a provider
/// cannot make the server buffer more); invalid UTF-8 is replaced.
async fn read_body(mut resp: reqwest::Response, cap: u64) -> Result<String, Body> {
    if resp.content_length().is_some_and(|n| n > cap) {
        return Err(Body::TooLarge);
    }
    let mut buf: Vec<u8> = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(Body::Failed)? {
        if (buf.len() as u64).saturating_add(chunk.len() as u64) > cap {
            return Err(Body::TooLarge);
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// One HTTP client for every API junior of the process: building one loads the TLS
/// roots (milliseconds per junior), and a shared one reuses connections to a provider.
fn shared_client() -> reqwest::Client {
    static CLIENT: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    CLIENT.get_or_init(reqwest::Client::new).clone()
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

#[derive(Deserialize, Default)]
struct Usage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    total_tokens: Option<u64>,
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
        self.providers.iter().try_for_each(ProviderConfig::validate)
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
        let mut all_exhausted = true;
        for p in &self.providers {
            if let Some(reason) = self.ledger.exhausted(&p.name).await? {
                last.get_or_insert(DriverError::QuotaExhausted {
                    provider: p.name.clone(),
                    reason,
                });
                continue;
            }
            match self.ask(p, &task).await {
                Ok(answer) => {
                    self.used = Some(p.name.clone());
                    return Ok(answer);
                }
                Err(e) => {
                    tracing::info!(provider = %p.name, error = %e, "provider failed; trying the next");
                    all_exhausted &= matches!(e, DriverError::QuotaExhausted { .. });
                    last = Some(e);
                }
            }
        }
        Err(match last {
            Some(DriverError::QuotaExhausted { .. }) | None if all_exhausted => {
                DriverError::QuotaExhausted {
                    provider: self
                        .providers
                        .iter()
                        .map(|p| p.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                    reason: "every provider's quota is used up".into(),
                }
            }
            Some(e) => e,
            None => DriverError::State {
                reason: "no provider answered".into(),
            },
        })
    }

    async fn cleanup(&mut self) -> Result<(), DriverError> {
        self.task = None;
        Ok(())
    }
}
