//! Orchestrata: the event-sourced control plane for multi-agent systems.
//!
//! - [`log`]: the persistent event log (sled or Kafka) every state change is appended to.
//! - [`config`]: configuration of the log (backend, durability, retention).
//! - [`kernel`]: commands become events; the Postman; sessions.
//! - [`governance`]: every authorization a Prolog decision, every decision an event;
//!   audit re-evaluates them from the log.
//! - [`projection`]: the runner keeping the views folded, stored and readable.
//! - [`agents`]: multi-agent coordination (spec 005): hierarchy, escalation, juniors.
//! - [`gateway`]: the WebSocket JSON-RPC front door (spec 014): methods, subscriptions
//!   and replay served from the log.
//! - [`roles`]: what `orchestrata up --role` runs in one process of a split deployment.
//! - [`mcp`]: `orchestrata mcp`, the gateway's methods as MCP tools on stdio.
//! - [`cli`]: the `orchestrata` command line.

pub mod agents;
pub mod cli;
pub mod config;
pub mod gateway;
pub mod governance;
pub mod kernel;
pub mod log;
pub mod mcp;
pub mod projection;
pub mod roles;
