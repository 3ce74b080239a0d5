//! `orchestrata mcp`: serve the gateway's methods as MCP tools on stdin/stdout (see
//! [`crate::mcp`]). The gateway and its token come from `GATEWAY_HOST`, `GATEWAY_PORT`
//! and `GATEWAY_TOKEN` in the environment — never from a flag.

use std::path::PathBuf;

use clap::Args;

/// Arguments of `orchestrata mcp`.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// Append-only JSON-lines ledger of every tool-call decision
    /// [default: $XDG_STATE_HOME/orchestrata/mcp-ledger.jsonl].
    #[arg(long, value_name = "FILE", env = "ORCHESTRATA_MCP_LEDGER")]
    ledger: Option<PathBuf>,
}

pub(super) async fn run(args: McpArgs) -> anyhow::Result<()> {
    let settings = crate::mcp::GatewaySettings::from_env()?;
    let ledger = args.ledger.unwrap_or_else(crate::mcp::default_ledger_path);
    crate::mcp::run(settings, &ledger).await?;
    Ok(())
}
