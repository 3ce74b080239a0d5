//! Multi-agent coordination (spec 005): hierarchy, lifespans, escalation, junior
//! Volks and their drivers, parallel delegation, the review-fix loop, workflows.
//!
//! Everything that changes who exists or who decides is a kernel command and so an
//! event on the log (`spawn_volk`, `terminate_volk`, `escalate_volk`, the workflow
//! commands): a replay gives the same tree, the same escalations and the same human
//! queue. The parts here that *run* things (drivers, the lifespan supervisor, the
//! review loop) hold no state of their own beyond what they read back from the kernel.
//!
//! - [`AgentTree`]: the hierarchy as a pure fold, with spec 005's [`limits`]; both live
//!   in the pure `orchestrata_projections::agents`, which the kernel folds too.
//! - [`driver`]: the [`Driver`] trait every junior runtime implements; [`drivers`]: CLI, API.
//! - [`service`]: [`Agents`], spawn / terminate / escalate / task and session ends.
//! - [`lifespan`]: the deadline supervisor. [`metrics`]: Prometheus series.
//! - [`delegation`]: one junior or a fan-out of up to five, with synthesis;
//!   [`profiles`]: the same from the gateway, over the configured `agents.drivers`;
//!   [`synthesis`]: scoring the answers with the review checkers, best or merge.
//! - [`review`]: the review-fix loop (`review_code` -> `fix_issues` -> `review_complete`).
//! - [`workflow`]: starting, supervising and closing runs of the built-in pipeline
//!   (its steps: `pipeline`); [`workflow_view`]: a run's state from the log.
//! - [`escalation`]: deterministic resolution of the next party on an escalation path.
//! - [`settings`]: the `agents:` section of the configuration, checked once for
//!   `config check` and `up` alike.

pub mod delegation;
pub mod driver;
pub mod drivers;
pub mod error;
pub mod escalation;
pub mod juniors;
pub mod lifespan;
pub mod metrics;
mod pipeline;
pub mod profiles;
pub mod providers;
pub mod review;
pub mod service;
pub mod settings;
pub mod synthesis;
pub mod workflow;
pub mod workflow_view;

pub use driver::{Driver, DriverError, Task};
pub use error::AgentError;
pub use escalation::{EscalationPaths, Resolution};
pub use metrics::AgentMetrics;
/// The hierarchy's fold and spec 005's limits live in the pure crate, where the kernel
/// reads them without depending on this module (which drives the kernel).
pub use orchestrata_projections::agents::{
    limits, AgentKind, AgentNode, AgentTree, HumanEscalation, Lifespan, JUNIOR, KIND_KEY,
};
pub use service::{Agents, LifespanSpec, SpawnSpec};
