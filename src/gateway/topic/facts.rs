//! What subscription filters look at: the Volks, thread, subject and delivery status an
//! event is about — and the packet index that completes a packet's transitions.
//!
//! Only `packet_sent` carries the whole packet; later transitions (`packet_delivered`,
//! `packet_acknowledged`...) carry the message id alone. Their sender, recipient and
//! subject come from the [`PacketIndex`] view, folded once per event over the whole
//! log by the projection runner. [`FilterIndex`] waits until that view has folded as
//! far as the events being filtered, so a filter's answer is a pure function of the
//! log ([`facts_of`]): never of what some cache held, what was replayed before, or
//! how long the gateway has been up.

use std::time::Duration;

use orchestrata_projections::packet::{facts_with, transition_of};
use orchestrata_projections::PacketIndex;
use orchestrata_schemas::events::{Envelope, Stream};

pub use orchestrata_projections::packet::{facts_of, Facts};

use crate::projection::{ProjectionError, ViewHandle};

/// Longest a replay waits for the packet index to reach the events it filters. Longer
/// than a read-your-write wait: a gateway that just started may still be folding the
/// log into its index, and the answer must wait for it rather than be wrong.
pub const CATCH_UP: Duration = Duration::from_secs(30);

/// The packet index as filters read it: a live [`PacketIndex`] and the wait that
/// makes its answers final.
#[derive(Clone)]
pub struct FilterIndex {
    packets: ViewHandle<PacketIndex>,
}

impl FilterIndex {
    /// Filters reading `packets` (a handle on the runner's live view).
    pub fn new(packets: ViewHandle<PacketIndex>) -> Self {
        FilterIndex { packets }
    }

    /// The live view.
    pub fn view(&self) -> &ViewHandle<PacketIndex> {
        &self.packets
    }

    /// The facts of every envelope of `envelopes`, once the index settles them all:
    /// when one is a transition of a packet the index does not know yet, waits (at
    /// most `timeout`) until the index has folded `cxp.traffic` up to it.
    pub async fn facts_all(
        &self,
        envelopes: &[Envelope],
        timeout: Duration,
    ) -> Result<Vec<Facts>, ProjectionError> {
        let unsettled = {
            let index = self.packets.read();
            envelopes
                .iter()
                .filter(|e| !index.settles(e))
                .map(|e| e.sequence)
                .max()
        };
        if let Some(sequence) = unsettled {
            // Only packet transitions can be unsettled, and they are on cxp.traffic.
            self.packets
                .wait_for(Stream::CxpTraffic, sequence, timeout)
                .await?;
        }
        envelopes.iter().map(|e| self.facts_now(e)).collect()
    }

    /// The facts of `envelope` from what the index holds now (in memory, or in the
    /// store for a packet it let go of): final once the index settles `envelope`.
    pub fn facts_now(&self, envelope: &Envelope) -> Result<Facts, ProjectionError> {
        match transition_of(&envelope.record.event) {
            None => Ok(facts_with(envelope, None)),
            Some(id) => {
                let parties = self.packets.parties(id)?;
                Ok(facts_with(
                    envelope,
                    parties.as_ref().map(|p| p.as_parties()),
                ))
            }
        }
    }

    /// The facts of one envelope (see [`FilterIndex::facts_all`]).
    pub async fn facts(
        &self,
        envelope: &Envelope,
        timeout: Duration,
    ) -> Result<Facts, ProjectionError> {
        let settled = self.packets.read().settles(envelope);
        if !settled {
            self.packets
                .wait_for(Stream::CxpTraffic, envelope.sequence, timeout)
                .await?;
        }
        self.facts_now(envelope)
    }
}
