//! [`Checkpoint`]: how far a view has folded each stream.

use std::collections::BTreeMap;

use orchestrata_schemas::events::Stream;
use serde::{Deserialize, Serialize};

/// The last sequence a view applied, per stream.
///
/// This is what makes folding idempotent: [`Checkpoint::admit`] accepts an event only if
/// its sequence is above the last one applied on its stream. Because the log hands out
/// each stream in order, anything at or below the checkpoint is a re-delivery (or an
/// out-of-order straggler) and must be skipped. Serialized as
/// `{"cxp.traffic": 41, ...}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Checkpoint(BTreeMap<Stream, u64>);

impl Checkpoint {
    /// Records `sequence` on `stream` and returns `true` if it is new (above the last
    /// applied one); returns `false`, changing nothing, for a repeat or an older event.
    pub fn admit(&mut self, stream: Stream, sequence: u64) -> bool {
        match self.0.get_mut(&stream) {
            Some(last) if sequence <= *last => false,
            Some(last) => {
                *last = sequence;
                true
            }
            None => {
                self.0.insert(stream, sequence);
                true
            }
        }
    }

    /// The last sequence applied on `stream`, if any.
    pub fn last(&self, stream: Stream) -> Option<u64> {
        self.0.get(&stream).copied()
    }

    /// The first sequence still to apply on `stream` (0 if nothing was applied yet):
    /// where a reader resumes.
    pub fn next(&self, stream: Stream) -> u64 {
        self.last(stream).map_or(0, |last| last + 1)
    }

    /// Whether the view has applied `sequence` of `stream` (read-your-write check).
    pub fn has_passed(&self, stream: Stream, sequence: u64) -> bool {
        self.last(stream).is_some_and(|last| last >= sequence)
    }

    /// Every stream with its last applied sequence, in stream order.
    pub fn iter(&self) -> impl Iterator<Item = (Stream, u64)> + '_ {
        self.0.iter().map(|(s, q)| (*s, *q))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // REQ-004-INTG-011
    #[test]
    fn admits_each_sequence_once_and_in_order_only() {
        let mut c = Checkpoint::default();
        assert_eq!(c.next(Stream::CxpTraffic), 0);
        assert!(c.admit(Stream::CxpTraffic, 0));
        assert!(!c.admit(Stream::CxpTraffic, 0), "a repeat is refused");
        assert!(c.admit(Stream::CxpTraffic, 5));
        assert!(
            !c.admit(Stream::CxpTraffic, 3),
            "an older straggler is refused"
        );
        assert!(c.admit(Stream::SessionEvents, 0), "streams are independent");
        assert_eq!(c.last(Stream::CxpTraffic), Some(5));
        assert_eq!(c.next(Stream::CxpTraffic), 6);
        assert!(c.has_passed(Stream::CxpTraffic, 5));
        assert!(!c.has_passed(Stream::CxpTraffic, 6));
        assert!(!c.has_passed(Stream::VolkLifecycle, 0));
        let json = serde_json::to_string(&c).expect("serializes");
        assert_eq!(json, r#"{"cxp.traffic":5,"session.events":0}"#);
        let back: Checkpoint = serde_json::from_str(&json).expect("parses");
        assert_eq!(back, c);
    }
}
