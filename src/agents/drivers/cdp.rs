//! A minimal Chrome DevTools Protocol client over one WebSocket to the *browser*
//! endpoint, with flattened sessions for pages.
//!
//! Two background tasks own the socket: a writer sending the frames queued by
//! [`Cdp::call`], and a reader routing each reply to its waiting call by id and each
//! event (a frame with a `method`) to the [`Event`] channel returned by
//! [`Cdp::connect`]. When the browser goes away the reader marks the connection
//! closed ([`Cdp::is_closed`]) and every pending and later call fails with
//! [`DriverError::Protocol`]. Nothing the browser sends can panic the client: frames
//! that do not parse are skipped.
//!
//! A [`Cdp`] is a cheap handle: calls on the value returned by [`Cdp::connect`] go to
//! the browser target (e.g. `Fetch.enable` for every page), calls on
//! [`Cdp::attach_first_page`]'s handle go to that page (`Page.navigate`,
//! `Runtime.evaluate`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;

use crate::agents::driver::DriverError;

/// An event the browser sent (`Fetch.requestPaused`, `Target.targetCreated`...).
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// The event's method name.
    pub method: String,
    /// Its parameters.
    pub params: serde_json::Value,
    /// The flattened session it came from (`None` for the browser target).
    pub session_id: Option<String>,
}

type Reply = Result<serde_json::Value, String>;

#[derive(Default)]
struct Shared {
    pending: Mutex<HashMap<u64, oneshot::Sender<Reply>>>,
    closed: AtomicBool,
}

impl Shared {
    fn pending(&self) -> std::sync::MutexGuard<'_, HashMap<u64, oneshot::Sender<Reply>>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

struct Inner {
    shared: Arc<Shared>,
    out: mpsc::UnboundedSender<String>,
    next_id: AtomicU64,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// A handle on one DevTools connection, bound to the browser or to one page session.
#[derive(Clone)]
pub struct Cdp {
    inner: Arc<Inner>,
    session: Option<String>,
}

impl std::fmt::Debug for Cdp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cdp")
            .field("session", &self.session)
            .field("closed", &self.is_closed())
            .finish()
    }
}

fn protocol(reason: impl Into<String>) -> DriverError {
    DriverError::Protocol {
        reason: reason.into(),
    }
}

fn timeout(limit: Duration) -> DriverError {
    DriverError::Timeout {
        after_ms: u64::try_from(limit.as_millis()).unwrap_or(u64::MAX),
    }
}

/// Routes one text frame: a reply to its caller, an event to `events`.
fn route(shared: &Shared, events: &mpsc::UnboundedSender<Event>, text: &str) {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(text) else {
        return;
    };
    if let Some(id) = value.get("id").and_then(serde_json::Value::as_u64) {
        if let Some(tx) = shared.pending().remove(&id) {
            let reply = match value.get("error") {
                Some(err) => Err(err.to_string()),
                None => Ok(value.get("result").cloned().unwrap_or_default()),
            };
            let _ = tx.send(reply);
        }
    } else if let Some(method) = value.get("method").and_then(serde_json::Value::as_str) {
        let _ = events.send(Event {
            method: method.to_owned(),
            params: value.get("params").cloned().unwrap_or_default(),
            session_id: value
                .get("sessionId")
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned),
        });
    }
}

impl Cdp {
    /// Connects to the browser endpoint `ws_url` (`ws://127.0.0.1:<port>/devtools/browser/<id>`,
    /// as Chromium announces it on stderr); the events come out of the receiver.
    pub async fn connect(
        ws_url: &str,
        limit: Duration,
    ) -> Result<(Cdp, mpsc::UnboundedReceiver<Event>), DriverError> {
        let (ws, _) = tokio::time::timeout(limit, tokio_tungstenite::connect_async(ws_url))
            .await
            .map_err(|_| timeout(limit))?
            .map_err(|e| protocol(format!("devtools websocket: {e}")))?;
        let (mut sink, mut stream) = ws.split();
        let shared = Arc::new(Shared::default());
        let (out, mut queue) = mpsc::unbounded_channel::<String>();
        let (events_tx, events) = mpsc::unbounded_channel();
        let writer = tokio::spawn(async move {
            while let Some(frame) = queue.recv().await {
                if sink.send(Message::Text(frame.into())).await.is_err() {
                    break;
                }
            }
        });
        let reader_shared = Arc::clone(&shared);
        let reader = tokio::spawn(async move {
            while let Some(Ok(msg)) = stream.next().await {
                if let Message::Text(text) = msg {
                    route(&reader_shared, &events_tx, text.as_str());
                }
            }
            // Closed first, then the waiting calls fail: a caller seeing the error can
            // rely on `is_closed`.
            reader_shared.closed.store(true, Ordering::SeqCst);
            reader_shared.pending().clear();
        });
        let inner = Inner {
            shared,
            out,
            next_id: AtomicU64::new(0),
            tasks: vec![writer, reader],
        };
        Ok((
            Cdp {
                inner: Arc::new(inner),
                session: None,
            },
            events,
        ))
    }

    /// Attaches (flattened) to the browser's first page target; calls on the returned
    /// handle go to that page.
    pub async fn attach_first_page(&self, limit: Duration) -> Result<Cdp, DriverError> {
        let targets = self
            .call("Target.getTargets", serde_json::json!({}), limit)
            .await?;
        let target_id = targets["targetInfos"]
            .as_array()
            .and_then(|all| {
                all.iter()
                    .find(|t| t["type"] == "page")
                    .and_then(|t| t["targetId"].as_str())
            })
            .ok_or_else(|| protocol("no page target"))?
            .to_owned();
        let attached = self
            .call(
                "Target.attachToTarget",
                serde_json::json!({ "targetId": target_id, "flatten": true }),
                limit,
            )
            .await?;
        let session = attached["sessionId"]
            .as_str()
            .ok_or_else(|| protocol("Target.attachToTarget: no sessionId"))?;
        Ok(Cdp {
            inner: Arc::clone(&self.inner),
            session: Some(session.to_owned()),
        })
    }

    /// Whether the browser closed the connection (crashed or was killed).
    pub fn is_closed(&self) -> bool {
        self.inner.shared.closed.load(Ordering::SeqCst)
    }

    /// Calls `method` and returns its `result`, within `limit`.
    pub async fn call(
        &self,
        method: &str,
        params: serde_json::Value,
        limit: Duration,
    ) -> Result<serde_json::Value, DriverError> {
        let closed = || protocol(format!("{method}: the browser closed the connection"));
        if self.is_closed() {
            return Err(closed());
        }
        let id = self.inner.next_id.fetch_add(1, Ordering::SeqCst) + 1;
        let mut request = serde_json::json!({ "id": id, "method": method, "params": params });
        if let Some(s) = &self.session {
            request["sessionId"] = serde_json::Value::from(s.as_str());
        }
        let (tx, rx) = oneshot::channel();
        self.inner.shared.pending().insert(id, tx);
        if self.inner.out.send(request.to_string()).is_err() || self.is_closed() {
            self.inner.shared.pending().remove(&id);
            return Err(closed());
        }
        match tokio::time::timeout(limit, rx).await {
            Ok(Ok(Ok(result))) => Ok(result),
            Ok(Ok(Err(err))) => Err(protocol(format!("{method}: {err}"))),
            Ok(Err(_)) => Err(closed()),
            Err(_) => {
                self.inner.shared.pending().remove(&id);
                Err(timeout(limit))
            }
        }
    }

    /// Evaluates `expression` in the page and returns its value (by value).
    pub async fn eval(
        &self,
        expression: &str,
        limit: Duration,
    ) -> Result<serde_json::Value, DriverError> {
        let r = self
            .call(
                "Runtime.evaluate",
                serde_json::json!({ "expression": expression, "returnByValue": true, "awaitPromise": true }),
                limit,
            )
            .await?;
        if let Some(ex) = r.get("exceptionDetails") {
            return Err(protocol(format!("page script failed: {ex}")));
        }
        Ok(r["result"]["value"].clone())
    }
}
