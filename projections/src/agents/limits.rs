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
/// The longest a junior may be spawned to live (`lifespan_ms`): 365 days. The
/// gateway's params schema says the same (`agents.spawn` `deadline_ms` maximum).
pub const MAX_LIFESPAN_MS: i64 = 365 * 24 * 3_600_000;

/// When a junior spawned `at` with `lifespan_ms = ms` dies; `None` when that time is
/// not representable (the kernel refuses such a spawn, so a fold never meets one).
pub fn deadline(
    at: chrono::DateTime<chrono::Utc>,
    ms: i64,
) -> Option<chrono::DateTime<chrono::Utc>> {
    chrono::TimeDelta::try_milliseconds(ms).and_then(|d| at.checked_add_signed(d))
}
