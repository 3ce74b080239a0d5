//! One module per method family; each handler is `async fn(Call) -> RpcResult`.

pub mod auth;
pub mod config;
pub mod cxp;
pub mod delegate;
pub mod escalations;
pub mod gateway;
pub mod governance;
pub mod juniors;
pub mod knowledge;
pub mod replay;
pub mod session;
pub mod session_write;
pub mod subscribe;
pub mod volk;
pub mod workflow;
