//! What every mode shares: one process clock, the send stamp a packet carries,
//! per-subscriber delivery tallies, percentiles and the `key=value` report.
//!
//! A fan-out run measures delivery latency on one clock: the publisher writes the
//! instant it sends (nanoseconds since the run's [`Clock`] started) into the packet as a
//! stamp `wsl-<seq>-<ns>`, and a subscriber reads the clock again when the frame that
//! carries the stamp arrives. Publisher and subscribers live in the same process, so no
//! clock skew enters the figure.

use std::fmt::{self, Display};
use std::sync::LazyLock;
use std::time::Instant;

use memchr::memmem;

/// The run's monotonic clock; every instant is nanoseconds since its start.
#[derive(Debug, Clone, Copy)]
pub struct Clock(Instant);

impl Clock {
    /// Starts the clock.
    pub fn start() -> Clock {
        Clock(Instant::now())
    }

    /// Nanoseconds since the clock started.
    pub fn now_ns(&self) -> u64 {
        u64::try_from(self.0.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

/// The stamp a fan-out packet carries: its sequence in the run and its send instant.
pub fn stamp(seq: u64, sent_ns: u64) -> String {
    format!("wsl-{seq}-{sent_ns}")
}

/// The first stamp in `text` (a frame as it arrived), as `(seq, sent_ns)`.
///
/// ```text
/// find_stamp(r#"{"payload":{"stamp":"wsl-7-123456"}}"#) == Some((7, 123456))
/// ```
pub fn find_stamp(text: &str) -> Option<(u64, u64)> {
    static STAMP: LazyLock<memmem::Finder<'static>> = LazyLock::new(|| memmem::Finder::new("wsl-"));
    let at = STAMP.find(text.as_bytes())? + 4;
    let rest = &text[at..];
    let seq_end = rest.find(|c: char| !c.is_ascii_digit())?;
    let seq = rest[..seq_end].parse().ok()?;
    let rest = rest[seq_end..].strip_prefix('-')?;
    let ns_end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let ns = rest[..ns_end].parse().ok()?;
    Some((seq, ns))
}

/// A set of packet sequences, one bit each.
#[derive(Debug, Default, Clone)]
pub struct SeqSet(Vec<u64>);

impl SeqSet {
    /// Adds `seq`; true when it was not there yet.
    pub fn insert(&mut self, seq: u64) -> bool {
        let (word, bit) = ((seq / 64) as usize, seq % 64);
        if word >= self.0.len() {
            self.0.resize(word + 1, 0);
        }
        let fresh = self.0[word] & (1 << bit) == 0;
        self.0[word] |= 1 << bit;
        fresh
    }

    /// How many sequences of `self` are missing from `other`.
    pub fn missing_from(&self, other: &SeqSet) -> u64 {
        self.0
            .iter()
            .enumerate()
            .map(|(i, w)| (w & !other.0.get(i).copied().unwrap_or(0)).count_ones() as u64)
            .sum()
    }
}

/// What one subscriber saw.
#[derive(Debug, Default)]
pub struct Tally {
    /// Packets received at least once.
    pub seen: SeqSet,
    /// Delivery latency of each packet's first receipt, in microseconds.
    pub latency_us: Vec<u32>,
    /// Frames (or protocol messages) received after subscribing.
    pub frames: u64,
    /// `gateway.gap` notices (events the server dropped for this subscriber).
    pub gaps: u64,
    /// Arrival of the last first receipt (clock nanoseconds).
    pub last_ns: u64,
}

impl Tally {
    /// Counts a frame that arrived at `now_ns`; when it carries a stamp seen for the
    /// first time, records that packet's delivery latency. True for a first receipt.
    pub fn frame(&mut self, text: &str, now_ns: u64) -> bool {
        self.frames += 1;
        let Some((seq, sent_ns)) = find_stamp(text) else {
            return false;
        };
        if !self.seen.insert(seq) {
            return false;
        }
        let us = now_ns.saturating_sub(sent_ns) / 1_000;
        self.latency_us.push(u32::try_from(us).unwrap_or(u32::MAX));
        self.last_ns = self.last_ns.max(now_ns);
        true
    }
}

/// The value at quantile `q` (0..=1) of sorted `values`, nearest rank; 0 when empty.
pub fn percentile<T: Copy + Default>(sorted: &[T], q: f64) -> T {
    if sorted.is_empty() {
        return T::default();
    }
    let rank = ((sorted.len() as f64) * q).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Microseconds as milliseconds with three decimals.
pub fn ms(us: u64) -> String {
    format!("{:.3}", us as f64 / 1_000.0)
}

/// A run's results: `key=value` lines, in the order they were added.
#[derive(Debug, Default, Clone)]
pub struct Report(Vec<(String, String)>);

impl Report {
    /// Adds one line.
    pub fn put(&mut self, key: &str, value: impl Display) -> &mut Self {
        self.0.push((key.to_string(), value.to_string()));
        self
    }

    /// The value of `key`, if the run reported it.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

impl Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (k, v) in &self.0 {
            writeln!(f, "{k}={v}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_round_trip_inside_json() {
        let frame = format!(r#"{{"payload":{{"stamp":"{}"}}}}"#, stamp(7, 123_456));
        assert_eq!(find_stamp(&frame), Some((7, 123_456)));
        assert_eq!(find_stamp("no stamp"), None);
    }

    #[test]
    fn missing_counts_bits_absent_from_the_other_set() {
        let (mut all, mut some) = (SeqSet::default(), SeqSet::default());
        for s in 0..130 {
            all.insert(s);
        }
        some.insert(3);
        assert_eq!(all.missing_from(&some), 129);
        assert!(!some.insert(3) && some.insert(4));
    }

    #[test]
    fn percentile_is_nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 0.5), 50);
        assert_eq!(percentile(&v, 0.99), 99);
        assert_eq!(percentile::<u64>(&[], 0.5), 0);
    }
}
