//! Multi-agent coordination (spec 005): hierarchy, lifespans, escalation, junior
//! Volks and their drivers, parallel delegation, the review-fix loop, workflows.
//!
//! Everything that changes who exists or who decides is a kernel command and so an
//! event on the log (`spawn_volk`, `terminate_volk`, `escalate_volk`, the workflow
//! commands): a replay gives the same tree, the same escalations and the same human
//! queue. The parts here that *run* things (drivers, the lifespan supervisor, the
//! review loop) hold no state of their own beyond what they read back from the kernel.
//!
//! - [`tree`]: [`AgentTree`], the hierarchy as a pure fold.
//! - [`driver`]: the [`Driver`] trait every junior runtime implements; [`drivers`]: CLI, API.
//! - [`escalation`]: deterministic resolution of the next party on an escalation path.

pub mod driver;
pub mod drivers;
pub mod error;
pub mod escalation;
pub mod limits;
pub mod tree;

pub use driver::{Driver, DriverError, Task};
pub use error::AgentError;
pub use escalation::{EscalationPaths, Resolution};
pub use tree::{AgentKind, AgentNode, AgentTree, HumanEscalation, Lifespan, JUNIOR, KIND_KEY};
