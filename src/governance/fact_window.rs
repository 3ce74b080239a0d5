//! The packet window: the engine shows the most recent packets, not every packet ever
//! sent.
//!
//! Each clause costs a scryer 0.10 machine a few KB whatever its arguments, and a
//! retracted clause keeps its memory (and a retract visits every clause), so an engine
//! that held every packet would grow without bound with traffic. The facts view
//! therefore keeps a window of the
//! `window` most recent packets, ordered by the sequence of their `packet sent`:
//!
//! - when more than `window + slack` packets are shown, the oldest are hidden until
//!   `window` remain, and the floor — the sequence of the oldest packet still shown —
//!   moves up (one blackboard write per slide, not one retract per packet);
//! - the prelude's `cxp_packet/12`, `cxp_delivery_status/3` and `cxp_work_status/3`
//!   show only packets at or above the floor, so a hidden packet is gone for policies
//!   at once, and its clauses leave the engine when the engine is next renewed
//!   (`renewal.rs`), which loads only the shown packets;
//! - later events of a hidden packet change nothing.
//!
//! What a policy sees is a pure function of the log and the window, so `audit verify`
//! folds the same window (recorded with each decision) and re-evaluates a decision on
//! the facts it was taken on. Send counts (`cxp_sends/3`) are not windowed: they count
//! every packet of the history.

use super::facts::{Fact, FactChange, FactsView};

/// How many packets the engine shows by default.
pub const DEFAULT_FACT_WINDOW: u64 = 10_000;

/// How many packets beyond the window are shown before the oldest are hidden at once:
/// a sixteenth of the window, so the floor moves once per `window / 16` packets.
pub fn slack(window: u64) -> u64 {
    (window / 16).max(1)
}

impl FactsView {
    /// Hides the oldest packets when more than `window + slack` are shown, and moves
    /// the floor to the oldest packet left.
    pub(super) fn slide(&mut self, changes: &mut Vec<FactChange>) {
        let Some(window) = self.window else {
            return;
        };
        let shown = self.packets.len() as u64;
        if shown <= window.saturating_add(slack(window)) {
            return;
        }
        while self.packets.len() as u64 > window {
            let Some((_, id)) = self.order.pop_first() else {
                break;
            };
            self.packets.remove(&id);
        }
        let floor = self
            .order
            .first_key_value()
            .map_or(self.floor, |(sequence, _)| *sequence);
        changes.push(FactChange::Retract(Fact::Floor(self.floor)));
        changes.push(FactChange::Assert(Fact::Floor(floor)));
        self.floor = floor;
    }

    /// Packets currently shown.
    pub fn shown_packets(&self) -> usize {
        self.packets.len()
    }
}
