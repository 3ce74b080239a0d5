//! What each request of a batch is answered once the batch's append returned.

use std::ops::Range;

use super::load;
use super::outcome::Appended;
use super::KernelError;

/// Turns what the append stored into each request's answer, in batch order.
///
/// A request whose records all landed is answered with their positions. One with a
/// record that did not land is `append_failed`, naming those of its events that did.
/// A request decided *after* such a request was decided on a state that held events
/// the log does not: a refusal, an empty inbox read, or a `duplicate` the reloaded
/// state does not confirm may be wrong, so it is answered `append_failed` too (a retry
/// decides it again on the reloaded state).
pub(super) struct Landing<'a> {
    stored: &'a load::Stored,
    reason: String,
    /// Whether an earlier request of the batch has a record that did not land.
    tainted: bool,
}

impl<'a> Landing<'a> {
    pub(super) fn new(stored: &'a load::Stored) -> Self {
        Landing {
            stored,
            reason: stored.reason(),
            tainted: false,
        }
    }

    /// The positions of a request's records `range`, or why it is not answered as
    /// decided; `doubtful`: the decision read the state without causing events that
    /// prove it (a refusal, a duplicate the log does not confirm, an empty inbox read).
    pub(super) fn events(
        &mut self,
        range: Range<usize>,
        doubtful: bool,
    ) -> Result<Vec<Appended>, KernelError> {
        let mine = self.stored.positions.get(range).unwrap_or_default();
        let landed: Vec<Appended> = mine.iter().flatten().copied().collect();
        if landed.len() < mine.len() {
            self.tainted = true;
            return Err(KernelError::AppendFailed {
                reason: self.reason.clone(),
                stored: landed,
            });
        }
        if self.tainted && doubtful {
            return Err(KernelError::AppendFailed {
                reason: format!(
                    "decided after a request of the same batch whose events did not land ({})",
                    self.reason
                ),
                stored: landed,
            });
        }
        Ok(landed)
    }
}
