//! The MCP server: lifecycle (`initialize`, `notifications/initialized`, `ping`), tool
//! discovery (`tools/list`) and the stdio loop.
//!
//! Requests are handled concurrently (a `ping` is answered while a `tools/call` waits for
//! the gateway); every response is written as one line by a single writer, so lines
//! never interleave. At end of input the server finishes the calls in flight, then
//! returns.

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use super::approval::ApprovalBook;
use super::client::GatewayClient;
use super::ledger::Ledger;
use super::protocol::{self, Incoming, ProtocolError};
use super::tools::Catalog;

const INSTRUCTIONS: &str = "Tools of the Orchestrata gateway (multi-agent control plane). Read-only tools run at once. \
Tools that change state (readOnlyHint false) need approval: call `approve` with {\"tool\": <name>, \"arguments\": <the exact arguments>}, \
then call the tool with the same arguments plus \"approval_token\". A token is single-use, bound to that tool and those arguments, and valid 300 s.";

/// One MCP server: the tool catalog, the approvals it issued, its ledger and its
/// gateway connection.
pub struct McpServer {
    pub(super) catalog: Catalog,
    pub(super) approvals: Mutex<ApprovalBook>,
    pub(super) ledger: Mutex<Ledger>,
    pub(super) gateway: GatewayClient,
}

impl McpServer {
    /// A server for the method table's tools, recording to `ledger`, calling `gateway`.
    pub fn new(ledger: Ledger, gateway: GatewayClient) -> Self {
        McpServer {
            catalog: Catalog::from_method_table(),
            approvals: Mutex::new(ApprovalBook::new()),
            ledger: Mutex::new(ledger),
            gateway,
        }
    }

    /// Handles one input line; returns the response line, if the message gets one.
    pub async fn handle_line(&self, line: &str) -> Option<Value> {
        match protocol::parse(line) {
            Err((id, error)) => Some(protocol::failure(id, &error)),
            Ok(Incoming::Notification { method }) => {
                tracing::debug!(%method, "notification");
                None
            }
            Ok(Incoming::Response) => None,
            Ok(Incoming::Request { id, method, params }) => {
                Some(match self.handle_request(&method, params).await {
                    Ok(result) => protocol::success(id, result),
                    Err(error) => protocol::failure(id, &error),
                })
            }
        }
    }

    async fn handle_request(
        &self,
        method: &str,
        params: Option<Value>,
    ) -> Result<Value, ProtocolError> {
        match method {
            "initialize" => initialize(params),
            "ping" => Ok(json!({})),
            "tools/list" => Ok(self.catalog.list().clone()),
            "tools/call" => self.call_tool(params).await,
            other => Err(ProtocolError::method_not_found(other)),
        }
    }

    /// Serves MCP on `input` / `output` until `input` ends.
    pub async fn serve<R, W>(self: Arc<Self>, input: R, output: W) -> std::io::Result<()>
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (tx, mut rx) = mpsc::channel::<Value>(64);
        let writer = tokio::spawn(async move {
            let mut output = output;
            while let Some(message) = rx.recv().await {
                let mut line = message.to_string();
                line.push('\n');
                output.write_all(line.as_bytes()).await?;
                output.flush().await?;
            }
            Ok::<(), std::io::Error>(())
        });
        let mut input = BufReader::new(input);
        let mut calls = JoinSet::new();
        let mut buf = Vec::new();
        loop {
            buf.clear();
            if input.read_until(b'\n', &mut buf).await? == 0 {
                break;
            }
            let line = String::from_utf8_lossy(&buf).trim().to_owned();
            if line.is_empty() {
                continue;
            }
            let server = self.clone();
            let tx = tx.clone();
            calls.spawn(async move {
                if let Some(response) = server.handle_line(&line).await {
                    let _ = tx.send(response).await;
                }
            });
            while calls.try_join_next().is_some() {}
        }
        while calls.join_next().await.is_some() {}
        drop(tx);
        writer
            .await
            .map_err(|e| std::io::Error::other(format!("stdout writer failed: {e}")))?
    }
}

fn initialize(params: Option<Value>) -> Result<Value, ProtocolError> {
    let requested = match params.as_ref().and_then(|p| p.get("protocolVersion")) {
        Some(Value::String(v)) => v.as_str(),
        Some(_) => {
            return Err(ProtocolError::invalid_params(
                "params.protocolVersion",
                "must be a string",
            ))
        }
        None => {
            return Err(ProtocolError::invalid_params(
                "params.protocolVersion",
                "is missing",
            ))
        }
    };
    Ok(json!({
        "protocolVersion": protocol::negotiate(requested),
        "capabilities": {"tools": {"listChanged": false}},
        "serverInfo": {"name": "orchestrata", "title": "Orchestrata gateway", "version": env!("CARGO_PKG_VERSION")},
        "instructions": INSTRUCTIONS,
    }))
}
