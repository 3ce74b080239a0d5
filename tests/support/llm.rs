//! A real HTTP server on loopback that answers the OpenAI chat-completions protocol
//! the way providers do: answers with `usage`, 429 with `Retry-After`, 429
//! `insufficient_quota`, other error statuses, slowness. The API driver and the API
//! juniors of a real `orchestrata up` talk to it over TCP.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};

/// How the provider behaves.
#[derive(Clone, Copy, Debug)]
pub enum Mode {
    /// Answers `<name>: <prompt> [<authorization>]`, usage 4 prompt + 6 completion tokens.
    Ok,
    /// 429 with `Retry-After: 0` for the first `n` calls, then answers.
    RateLimitFirst(u32),
    /// Always 429 `insufficient_quota`.
    NoQuota,
    /// Sleeps 5 s before answering.
    Slow,
    /// Always this HTTP status with an error body (401, 500, ...).
    Status(u16),
}

#[derive(Clone)]
struct Provider {
    name: &'static str,
    mode: Mode,
    calls: Arc<AtomicU32>,
}

/// A provider serving `/v1/chat/completions`; its base URL is `http://ADDR/v1`.
pub struct FakeProvider {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Requests it received.
    pub calls: Arc<AtomicU32>,
}

impl FakeProvider {
    /// The base URL to configure (`.../v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Requests received so far.
    pub fn calls(&self) -> u32 {
        self.calls.load(Ordering::SeqCst)
    }
}

async fn completions(
    State(p): State<Provider>,
    headers: HeaderMap,
    Json(body): Json<serde_json::Value>,
) -> Response {
    let n = p.calls.fetch_add(1, Ordering::SeqCst);
    let auth = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    match p.mode {
        Mode::RateLimitFirst(k) if n < k => {
            return (
                StatusCode::TOO_MANY_REQUESTS,
                [("retry-after", "0")],
                "{\"error\":{\"code\":\"rate_limit_exceeded\"}}",
            )
                .into_response()
        }
        Mode::NoQuota => {
            return (
                StatusCode::TOO_MANY_REQUESTS,
                "{\"error\":{\"code\":\"insufficient_quota\"}}",
            )
                .into_response()
        }
        Mode::Status(code) => {
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            return (
                status,
                format!("{{\"error\":{{\"message\":\"status {code}\"}}}}"),
            )
                .into_response();
        }
        Mode::Slow => tokio::time::sleep(Duration::from_secs(5)).await,
        _ => {}
    }
    let prompt = body["messages"][0]["content"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    Json(serde_json::json!({
        "id": "cmpl-1", "object": "chat.completion", "model": body["model"],
        "choices": [{"index": 0, "message": {"role": "assistant", "content": format!("{}: {prompt} [{auth}]", p.name)}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 4, "completion_tokens": 6, "total_tokens": 10}
    }))
    .into_response()
}

/// Starts a provider named `name` on 127.0.0.1, port 0, in this test's runtime.
pub async fn serve(name: &'static str, mode: Mode) -> FakeProvider {
    let calls = Arc::new(AtomicU32::new(0));
    let app = Router::new()
        .route("/v1/chat/completions", post(completions))
        .with_state(Provider {
            name,
            mode,
            calls: calls.clone(),
        });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind the provider");
    let addr = listener.local_addr().expect("provider address");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    FakeProvider { addr, calls }
}
