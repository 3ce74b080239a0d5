//! The constitutional limits and well-known names of spec 005, shared by the kernel's
//! validation and the coordination code.

/// Article VI: how deep the hierarchy may grow (a root is depth 0).
pub const MAX_DEPTH: usize = 3;
/// Article XII: live juniors per senior (also the delegation fan-out cap).
pub const MAX_JUNIORS: usize = 5;
/// The drivers a junior can run on.
pub const DRIVERS: [&str; 3] = ["cli", "api", "browser"];
/// The pseudo-party beyond the root of every escalation path: the human queue.
pub const HUMAN: &str = "human";
/// Subject of the packet telling a parent its child terminated.
pub const TERMINATED_SUBJECT: &str = "volk_terminated";
/// Subject of the packet carrying an escalation (and its context) to its target.
pub const ESCALATION_SUBJECT: &str = "escalation";
