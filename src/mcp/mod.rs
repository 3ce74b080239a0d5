//! `orchestrata mcp`: a Model Context Protocol server on stdin/stdout that lets an MCP
//! client (Claude Desktop, Claude Code, an agent SDK) use the gateway's methods as tools
//! (REQ-014-204..206).
//!
//! The server is a WebSocket JSON-RPC client of a running gateway
//! (`GATEWAY_HOST`:`GATEWAY_PORT`, authenticated with `GATEWAY_TOKEN` from the
//! environment). Its tools are generated from the gateway's method table — one per
//! exposed method, plus `approve` — so a method added to the table is a tool with no
//! change here. Calls of state-changing tools are gated by single-use, tool-bound,
//! argument-bound approval tokens valid 300 s, and every decision is a row of an
//! append-only ledger.
//!
//! ```text
//! client  ──stdin──▶  protocol (JSON-RPC lines) ─▶ server (initialize, tools/list)
//!                                                  └▶ call (gate ─ approval, ledger)
//!                                                        └▶ client ──ws──▶ gateway
//! client  ◀─stdout──  one response line per request
//! ```
//!
//! Modules: [`protocol`] framing and version negotiation; [`tools`] the catalog from the
//! method table; [`approval`] the token book; [`ledger`] the decision rows; [`client`]
//! the gateway connection; [`settings`] the environment; [`server`] lifecycle and the
//! stdio loop; `call` the gate and forwarding.

pub mod approval;
mod call;
pub mod client;
pub mod ledger;
pub mod protocol;
pub mod server;
pub mod settings;
pub mod tools;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use client::{GatewayClient, GatewayError};
pub use ledger::{Ledger, LedgerError};
pub use server::McpServer;
pub use settings::{GatewaySettings, SettingsError};

/// Why `orchestrata mcp` cannot start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// `GATEWAY_*` missing or malformed.
    #[error(transparent)]
    Settings(#[from] SettingsError),
    /// The ledger cannot be opened.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    /// The gateway refused the token at startup.
    #[error(transparent)]
    Gateway(#[from] GatewayError),
    /// stdin / stdout failed.
    #[error("MCP stdio: {0}")]
    Io(#[from] std::io::Error),
}

/// Where the ledger goes when `--ledger` / `ORCHESTRATA_MCP_LEDGER` is not given:
/// `$XDG_STATE_HOME/orchestrata/mcp-ledger.jsonl`, else
/// `$HOME/.local/state/orchestrata/mcp-ledger.jsonl`, else `./mcp-ledger.jsonl`.
pub fn default_ledger_path() -> PathBuf {
    let base = std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".local").join("state"))
        });
    match base {
        Some(dir) => dir.join("orchestrata").join("mcp-ledger.jsonl"),
        None => PathBuf::from("mcp-ledger.jsonl"),
    }
}

/// Runs the server on this process's stdin / stdout until stdin closes.
///
/// Fails before serving when the settings are bad, the ledger cannot be opened, or the
/// gateway refuses `GATEWAY_TOKEN`. A gateway that is not reachable yet is not fatal:
/// every tool call tries to connect again and reports the failure as a tool error.
pub async fn run(settings: GatewaySettings, ledger: &Path) -> Result<(), McpError> {
    let ledger = Ledger::open(ledger)?;
    tracing::info!(ledger = %ledger.path().display(), gateway = %settings.url(), "MCP server starting");
    let gateway = GatewayClient::new(settings);
    match gateway.connect().await {
        Ok(()) => tracing::info!(gateway = %gateway.url(), "authenticated with the gateway"),
        Err(e @ GatewayError::AuthRefused { .. }) => return Err(e.into()),
        Err(e) => tracing::warn!(error = %e, "gateway not reachable yet; tool calls will retry"),
    }
    let server = Arc::new(McpServer::new(ledger, gateway));
    server
        .serve(tokio::io::stdin(), tokio::io::stdout())
        .await?;
    Ok(())
}
