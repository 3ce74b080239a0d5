//! API driver (005 US-007, T16.6..T16.10): a real HTTP server on loopback that speaks
//! the OpenAI chat-completions API, with rate limits, slowness and quota exhaustion.

mod support;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use orchestrata::agents::driver::run_task;
use orchestrata::agents::drivers::api::{ApiDriver, ProviderConfig, QuotaBook};
use orchestrata::agents::{DriverError, Task};
use support::llm::{self, Mode};

async fn serve(name: &'static str, mode: Mode) -> (ProviderConfig, Arc<AtomicU32>) {
    let p = llm::serve(name, mode).await;
    (ProviderConfig::new(name, &p.base_url(), "m-1"), p.calls)
}

fn task(secs: u64) -> Task {
    Task {
        id: "t".into(),
        prompt: "write fizzbuzz".into(),
        timeout: Duration::from_secs(secs),
    }
}

// REQ-005-US-007-001 REQ-005-FR15-001 REQ-005-FR14-001
// T15.2 T16.6 T16.7 T16.10: a chat completion comes back; the key comes from the
// environment; tokens are counted.
#[tokio::test]
async fn api_junior_answers_and_counts_tokens() {
    let (mut p, _) = serve("alpha", Mode::Ok).await;
    std::env::set_var("ORCHESTRATA_TEST_API_KEY_ALPHA", "sk-test-1");
    p.api_key_env = Some("ORCHESTRATA_TEST_API_KEY_ALPHA".into());
    let quota = QuotaBook::default();
    let mut driver = ApiDriver::new(vec![p], quota.clone());
    let answer = run_task(&mut driver, &task(5)).await.unwrap();
    assert_eq!(answer, "alpha: write fizzbuzz [Bearer sk-test-1]");
    assert_eq!(quota.used("alpha"), 10);
    assert_eq!(driver.answered_by(), Some("alpha"));
}

// REQ-005-US-007-001 ISSUE-16: a key given in the configuration is sent when its
// environment variable is absent; the environment wins when both are there; Debug
// output never shows the key.
#[tokio::test]
async fn the_key_comes_from_the_environment_or_the_configuration() {
    let (mut p, _) = serve("delta", Mode::Ok).await;
    p.api_key = Some("sk-from-config".into());
    p.api_key_env = Some("ORCHESTRATA_TEST_API_KEY_DELTA_UNSET".into());
    let answer = run_task(
        &mut ApiDriver::new(vec![p.clone()], QuotaBook::default()),
        &task(5),
    )
    .await
    .unwrap();
    assert_eq!(answer, "delta: write fizzbuzz [Bearer sk-from-config]");
    std::env::set_var("ORCHESTRATA_TEST_API_KEY_DELTA_SET", "sk-from-env");
    p.api_key_env = Some("ORCHESTRATA_TEST_API_KEY_DELTA_SET".into());
    let answer = run_task(
        &mut ApiDriver::new(vec![p.clone()], QuotaBook::default()),
        &task(5),
    )
    .await
    .unwrap();
    assert_eq!(answer, "delta: write fizzbuzz [Bearer sk-from-env]");
    assert!(!format!("{p:?}").contains("sk-from-config"), "{p:?}");
}

// REQ-005-FR14-001 REQ-005-AC10-001 REQ-005-NFR10-001
// T16.8: 429s are retried after Retry-After; too many is a typed rate-limit error.
#[tokio::test]
async fn rate_limits_are_retried_then_reported() {
    let (p, calls) = serve("beta", Mode::RateLimitFirst(2)).await;
    let mut driver = ApiDriver::new(vec![p.clone()], QuotaBook::default());
    assert!(run_task(&mut driver, &task(5))
        .await
        .unwrap()
        .starts_with("beta:"));
    assert_eq!(calls.load(Ordering::SeqCst), 3);

    let (mut p, _) = serve("gamma", Mode::RateLimitFirst(10)).await;
    p.max_retries = 1;
    let err = run_task(&mut ApiDriver::new(vec![p], QuotaBook::default()), &task(5))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        DriverError::RateLimited {
            provider: "gamma".into(),
            retry_after_ms: 0
        }
    );
}

// REQ-005-FR14-001 REQ-005-AC10-001
// T16.10: quota exhaustion (reported, or counted against quota_tokens) falls back to the
// next provider; all exhausted is a typed error.
#[tokio::test]
async fn quota_exhaustion_falls_back_to_the_next_provider() {
    let (empty, _) = serve("empty", Mode::NoQuota).await;
    let (mut small, small_calls) = serve("small", Mode::Ok).await;
    small.quota_tokens = Some(10);
    let (backup, _) = serve("backup", Mode::Ok).await;
    let quota = QuotaBook::default();
    let providers = vec![empty, small, backup];
    let mut d = ApiDriver::new(providers.clone(), quota.clone());
    assert!(run_task(&mut d, &task(5))
        .await
        .unwrap()
        .starts_with("small:"));
    assert!(quota.is_exhausted("empty"));
    assert!(quota.is_exhausted("small"), "10 of 10 tokens used");
    let mut d = ApiDriver::new(providers.clone(), quota.clone());
    assert!(run_task(&mut d, &task(5))
        .await
        .unwrap()
        .starts_with("backup:"));
    assert_eq!(
        small_calls.load(Ordering::SeqCst),
        1,
        "an exhausted provider is not called again"
    );

    let (none, _) = serve("none", Mode::NoQuota).await;
    let err = run_task(
        &mut ApiDriver::new(vec![none], QuotaBook::default()),
        &task(5),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(err, DriverError::QuotaExhausted { ref provider, .. } if provider == "none"),
        "{err}"
    );
}

// REQ-005-US-007-001
// T16.9: a slow provider is a timeout; a bad URL or a dead port is a typed error.
#[tokio::test]
async fn timeouts_and_bad_endpoints_are_typed_errors() {
    let (slow, _) = serve("slow", Mode::Slow).await;
    let err = run_task(
        &mut ApiDriver::new(vec![slow], QuotaBook::default()),
        &task(1),
    )
    .await
    .unwrap_err();
    assert_eq!(err, DriverError::Timeout { after_ms: 1000 });
    let bad = ProviderConfig::new("bad", "ftp://example", "m");
    let err = run_task(
        &mut ApiDriver::new(vec![bad], QuotaBook::default()),
        &task(1),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(
            err,
            DriverError::Start {
                field: "base_url",
                ..
            }
        ),
        "{err}"
    );
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let dead = ProviderConfig::new("dead", &format!("http://127.0.0.1:{port}/v1"), "m");
    let err = run_task(
        &mut ApiDriver::new(vec![dead], QuotaBook::default()),
        &task(2),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, DriverError::Crashed { .. }), "{err}");
    let err = run_task(&mut ApiDriver::new(vec![], QuotaBook::default()), &task(1))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            DriverError::Start {
                field: "providers",
                ..
            }
        ),
        "{err}"
    );
}
