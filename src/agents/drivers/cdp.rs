//! A minimal Chrome DevTools Protocol client: one page target over a WebSocket,
//! request/response by id (events are skipped). Enough for the browser driver:
//! `Page.navigate` and `Runtime.evaluate`.

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use crate::agents::driver::DriverError;

/// A connection to one page.
pub struct Cdp {
    ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
    next_id: u64,
}

impl std::fmt::Debug for Cdp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cdp")
            .field("next_id", &self.next_id)
            .finish()
    }
}

fn protocol(reason: impl Into<String>) -> DriverError {
    DriverError::Protocol {
        reason: reason.into(),
    }
}

impl Cdp {
    /// Connects to the first page target of the browser listening on `port`.
    pub async fn first_page(port: u16) -> Result<Cdp, DriverError> {
        let list: serde_json::Value = reqwest::get(format!("http://127.0.0.1:{port}/json/list"))
            .await
            .map_err(|e| protocol(format!("devtools target list: {e}")))?
            .json()
            .await
            .map_err(|e| protocol(format!("devtools target list: {e}")))?;
        let url = list
            .as_array()
            .and_then(|targets| {
                targets
                    .iter()
                    .find(|t| t["type"] == "page")
                    .and_then(|t| t["webSocketDebuggerUrl"].as_str())
            })
            .ok_or_else(|| protocol("no page target"))?
            .to_owned();
        let (ws, _) = tokio_tungstenite::connect_async(url.as_str())
            .await
            .map_err(|e| protocol(format!("devtools websocket: {e}")))?;
        Ok(Cdp { ws, next_id: 0 })
    }

    /// Calls `method` and returns its `result`, within `limit`.
    pub async fn call(
        &mut self,
        method: &str,
        params: serde_json::Value,
        limit: Duration,
    ) -> Result<serde_json::Value, DriverError> {
        self.next_id += 1;
        let id = self.next_id;
        let request = serde_json::json!({ "id": id, "method": method, "params": params });
        self.ws
            .send(Message::Text(request.to_string().into()))
            .await
            .map_err(|e| protocol(format!("{method}: {e}")))?;
        let wait = async {
            while let Some(msg) = self.ws.next().await {
                let msg = msg.map_err(|e| protocol(format!("{method}: {e}")))?;
                let Message::Text(text) = msg else { continue };
                let value: serde_json::Value = serde_json::from_str(text.as_str())
                    .map_err(|e| protocol(format!("{method}: bad frame: {e}")))?;
                if value["id"].as_u64() != Some(id) {
                    continue;
                }
                if let Some(err) = value.get("error") {
                    return Err(protocol(format!("{method}: {err}")));
                }
                return Ok(value["result"].clone());
            }
            Err(protocol(format!(
                "{method}: the browser closed the connection"
            )))
        };
        tokio::time::timeout(limit, wait)
            .await
            .map_err(|_| DriverError::Timeout {
                after_ms: u64::try_from(limit.as_millis()).unwrap_or(u64::MAX),
            })?
    }

    /// Evaluates `expression` in the page and returns its value (by value).
    pub async fn eval(
        &mut self,
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
