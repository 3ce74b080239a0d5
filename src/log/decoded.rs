//! Decoded once, read by many: the events the live tails of one process share.
//!
//! Every view runner and every gateway hub tails the streams it folds: a `packet_sent`
//! is read by the thread, Volk, graph and packet-index runners and by the `cxp.traffic`
//! hub, a decision by the decision index, the graph and its hub. Decoded by each tail,
//! that is many Avro decodes per `cxp.send`, each allocating every string of the record
//! again. The tails that follow the head
//! of a stream read the same sequences within milliseconds of each other, so
//! [`Decoded`] keeps the last [`KEPT`] decoded events of each stream and hands out
//! the same [`Arc<Envelope>`] to every tail that asks for one of them.
//!
//! The ring is bounded by count ([`KEPT`]) and by the encoded size of what it holds
//! ([`KEPT_BYTES`]): packets may carry payloads up to the gateway's message limit
//! (1 MiB by default), and a ring of 4,096 of them would pin gigabytes. An event larger
//! than the whole budget is not kept (each tail decodes it), and the ring starts again
//! after it.
//!
//! The ring only grows at its end and only from the head: an event older than the
//! ring (a view catching up from its checkpoint, a replay) is decoded by its reader
//! and not kept, so a reader of history never pushes the head's events out. A reader
//! ahead of the ring (the first to see a new event after a pause) starts the ring
//! again from its event. Events carry their stream's epoch, and an event kept under
//! another epoch is never handed out: a recreated stream reuses sequences.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use orchestrata_schemas::events::{Envelope, Stream};

/// Decoded events kept per stream: enough of a busy stream that a view that pauses
/// to commit still finds what the others decoded, at a few MB of records per stream.
pub const KEPT: usize = 4096;

/// Encoded bytes of the events kept per stream, at most: 8 MiB, ~2,000 packets of the
/// pipelined benchmark's size but only eight of 1 MiB.
pub const KEPT_BYTES: usize = 8 << 20;

/// The last decoded events of each stream (see the module docs).
#[derive(Default)]
pub struct Decoded {
    rings: [Mutex<Ring>; Stream::ALL.len()],
}

/// Consecutive events of one stream, from `first`, with their encoded sizes.
#[derive(Default)]
struct Ring {
    first: u64,
    events: VecDeque<(Arc<Envelope>, usize)>,
    bytes: usize,
}

impl Ring {
    fn restart(&mut self, first: u64) {
        self.events.clear();
        self.bytes = 0;
        self.first = first;
    }
}

impl Decoded {
    fn ring(&self, stream: Stream) -> std::sync::MutexGuard<'_, Ring> {
        // Stream is a field-less enum: its discriminant indexes `Stream::ALL`'s length.
        self.rings[stream as usize]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// The event at `sequence` of `stream` under `epoch`, if another tail decoded it
    /// recently.
    pub fn get(&self, stream: Stream, epoch: &str, sequence: u64) -> Option<Arc<Envelope>> {
        let ring = self.ring(stream);
        let index = usize::try_from(sequence.checked_sub(ring.first)?).ok()?;
        ring.events
            .get(index)
            .filter(|(e, _)| e.epoch == epoch)
            .map(|(e, _)| e.clone())
    }

    /// Keeps `event` (`size` bytes encoded) if it extends the ring (the next
    /// sequence), or starts the ring again from it if it is past the ring's end; an
    /// older event is not kept, nor one larger than [`KEPT_BYTES`].
    pub fn offer(&self, event: &Arc<Envelope>, size: usize) {
        let mut ring = self.ring(event.stream);
        let end = ring.first + ring.events.len() as u64;
        let foreign = ring
            .events
            .back()
            .is_some_and(|(e, _)| e.epoch != event.epoch);
        if event.sequence > end || foreign || ring.events.is_empty() {
            ring.restart(event.sequence);
        } else if event.sequence < end {
            return;
        }
        if size > KEPT_BYTES {
            // Not kept: the next event is past the ring's end and starts it again.
            ring.restart(event.sequence + 1);
            return;
        }
        ring.events.push_back((event.clone(), size));
        ring.bytes += size;
        while ring.events.len() > KEPT || ring.bytes > KEPT_BYTES {
            if let Some((_, gone)) = ring.events.pop_front() {
                ring.bytes -= gone;
                ring.first += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use orchestrata_schemas::events::types::Health;
    use orchestrata_schemas::events::volk_lifecycle::VolkHealthChanged;
    use orchestrata_schemas::events::EventRecord;

    use super::*;

    fn event(stream: Stream, epoch: &str, sequence: u64) -> Arc<Envelope> {
        let record = EventRecord::new(
            "test",
            "U:Ox",
            VolkHealthChanged {
                alias: "U:Ox".into(),
                old: Health::Healthy,
                new: Health::Degraded,
                details: None,
            },
            chrono::DateTime::UNIX_EPOCH,
        );
        Arc::new(Envelope {
            stream,
            sequence,
            epoch: epoch.into(),
            record,
        })
    }

    // ISSUE-15: one decode per event for the tails at the head
    #[test]
    fn the_head_is_kept_and_shared_history_is_not() {
        let d = Decoded::default();
        let s = Stream::VolkLifecycle;
        for seq in 10..15 {
            d.offer(&event(s, "e1", seq), 100);
        }
        let first = d.get(s, "e1", 12).expect("kept");
        assert_eq!(first.sequence, 12);
        assert!(Arc::ptr_eq(&first, &d.get(s, "e1", 12).expect("kept")));
        // Another epoch, another stream, outside the ring: not handed out.
        assert!(d.get(s, "e2", 12).is_none());
        assert!(d.get(Stream::CxpTraffic, "e1", 12).is_none());
        assert!(d.get(s, "e1", 9).is_none());
        assert!(d.get(s, "e1", 15).is_none());
        // An older event (a reader of history) does not disturb the head.
        d.offer(&event(s, "e1", 3), 100);
        assert!(d.get(s, "e1", 3).is_none());
        assert!(d.get(s, "e1", 14).is_some());
        // A repeat keeps the first decode.
        d.offer(&event(s, "e1", 14), 100);
        assert!(Arc::ptr_eq(
            &d.get(s, "e1", 14).expect("kept"),
            &d.get(s, "e1", 14).expect("kept")
        ));
        // Past the end: the ring starts again there.
        d.offer(&event(s, "e1", 40), 100);
        assert!(d.get(s, "e1", 14).is_none());
        assert_eq!(d.get(s, "e1", 40).map(|e| e.sequence), Some(40));
        // A recreated stream (new epoch) replaces the ring even at a lower sequence.
        d.offer(&event(s, "e2", 0), 100);
        assert_eq!(d.get(s, "e2", 0).map(|e| e.sequence), Some(0));
        assert!(d.get(s, "e1", 40).is_none());
    }

    // ISSUE-15: the ring is bounded
    #[test]
    fn at_most_kept_events_stay() {
        let d = Decoded::default();
        let s = Stream::CxpTraffic;
        let total = KEPT as u64 + 10;
        for seq in 0..total {
            d.offer(&event(s, "e", seq), 100);
        }
        assert!(d.get(s, "e", 9).is_none());
        assert!(d.get(s, "e", 10).is_some());
        assert!(d.get(s, "e", total - 1).is_some());
        assert_eq!(d.ring(s).events.len(), KEPT);
    }

    // ISSUE-18: large payloads do not pin memory through the ring
    #[test]
    fn the_ring_keeps_at_most_its_byte_budget() {
        let d = Decoded::default();
        let s = Stream::CxpTraffic;
        let big = KEPT_BYTES / 4;
        for seq in 0..10 {
            d.offer(&event(s, "e", seq), big);
        }
        assert_eq!(d.ring(s).events.len(), 4);
        assert!(d.ring(s).bytes <= KEPT_BYTES);
        assert!(d.get(s, "e", 5).is_none());
        assert!(d.get(s, "e", 6).is_some());
        // One event over the whole budget is not kept; the ring starts after it.
        d.offer(&event(s, "e", 10), KEPT_BYTES + 1);
        assert!(d.get(s, "e", 10).is_none());
        assert!(d.get(s, "e", 9).is_none(), "the ring started again");
        d.offer(&event(s, "e", 11), 100);
        assert!(d.get(s, "e", 11).is_some());
        assert_eq!(d.ring(s).bytes, 100);
    }

    #[test]
    fn every_stream_has_its_ring() {
        for (i, s) in Stream::ALL.into_iter().enumerate() {
            assert_eq!(s as usize, i, "{s} indexes another stream's ring");
        }
    }
}
