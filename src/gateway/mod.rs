//! The WebSocket JSON-RPC gateway (spec 014): Orchestrata's front door.
//!
//! Clients connect to `ws://HOST:PORT/`, call `auth.authenticate`, then call methods
//! (JSON-RPC 2.0, batches of at most 50) and subscribe to topics whose events come
//! straight from the log, live or replayed by sequence, with gapless resume from an
//! `(epoch, sequence)` position. HTTP `/health`, `/ready` and `/metrics` share the port.
//!
//! Layout:
//! - [`server`]: start / stop, HTTP endpoints; [`connection`]: one socket, its
//!   running requests in [`inflight`], its slot in [`slots`];
//! - [`rpc`] framing, [`dispatch`] (auth gate, rate limit, scope, schema, handler),
//!   [`error`] codes;
//! - [`methods`]: the one declarative method table; [`handlers`]: one module per
//!   method family;
//! - [`auth`] (static tokens, scopes), [`authz`] (decisions, audited on the log);
//! - [`topic`]: hubs tailing the log, events serialized once, filters;
//! - [`config`], [`metrics`], [`schema`] (params JSON Schemas), [`state`], [`client`],
//!   [`outbox`] (per-client queue, drop-oldest, gap notices), [`rate_limit`];
//! - [`origin`] (which browser pages may connect), [`tls`] (`wss://` when a
//!   certificate is configured).
//!
//! ```no_run
//! # async fn demo(log: std::sync::Arc<dyn orchestrata::log::EventLog>) -> Result<(), Box<dyn std::error::Error>> {
//! use orchestrata::gateway::{self, GatewayConfig, Services};
//! let config = GatewayConfig::default().with_static_token("s3cret");
//! let running = gateway::start(config, Services::new(log)).await?;
//! println!("listening on {}", running.local_addr());
//! running.shutdown().await?;
//! # Ok(()) }
//! ```

pub mod acting;
pub mod auth;
pub mod auth_hmac;
pub mod auth_policy;
pub mod authz;
pub mod backends;
pub mod client;
pub mod config;
mod config_view;
pub mod connection;
pub mod console;
pub mod cypher;
pub mod dispatch;
pub mod error;
pub mod handlers;
pub mod idempotency;
pub mod inflight;
pub mod kernel_port;
pub mod methods;
pub mod metrics;
pub mod origin;
pub mod outbox;
pub mod owner;
pub mod presence;
pub mod principal;
pub mod rate_limit;
pub mod readiness;
pub mod rpc;
pub mod schema;
pub mod server;
pub mod shared;
pub mod slots;
pub mod state;
pub mod tls;
pub mod topic;
pub mod volk_health;

pub use auth::{Scope, TokenGrant};
pub use config::{GatewayConfig, GatewayConfigError, DEFAULT_LISTEN};
pub use error::{ErrorCode, RpcError};
pub use server::{start, GatewayError, RunningGateway};
pub use state::Services;
