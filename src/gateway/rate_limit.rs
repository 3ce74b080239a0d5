//! Per-client request rate limiting: a token bucket (REQ-014-186, ERR-003).
//!
//! A client holds a bucket of at most `rate` tokens, refilled continuously at `rate`
//! tokens per second. Every call — including each element of a batch — takes one token;
//! a call that finds less than one token is refused with -32002 and told how long until
//! the next token exists (`data.retry_after_ms`). A client that stays under its rate is
//! never refused, and a quiet client can burst up to one second's worth of calls.
//!
//! Unlike a fixed one-second window, the bucket has no window edge where a client could
//! fire twice its rate, and its retry hint is exact: one token's refill time, not "the
//! rest of the second".

use std::time::{Duration, Instant};

/// A token bucket: `capacity` tokens, refilled at `rate` per second.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    rate: f64,
    capacity: f64,
    tokens: f64,
    last: Instant,
}

impl TokenBucket {
    /// A full bucket allowing `rate_per_second` calls per second (a rate of 0 is
    /// treated as 1: the configuration refuses 0 anyway).
    pub fn new(rate_per_second: u32, now: Instant) -> Self {
        let rate = f64::from(rate_per_second.max(1));
        TokenBucket {
            rate,
            capacity: rate,
            tokens: rate,
            last: now,
        }
    }

    /// The refill rate in tokens per second.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// Takes one token at `now`. `Err(wait)` when the bucket is empty: `wait` is how
    /// long until one token is available again (never zero).
    pub fn try_take(&mut self, now: Instant) -> Result<(), Duration> {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.rate).min(self.capacity);
        self.last = now.max(self.last);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            return Ok(());
        }
        let wait = (1.0 - self.tokens) / self.rate;
        Err(Duration::from_secs_f64(wait).max(Duration::from_micros(1)))
    }
}

/// Milliseconds a client should wait, rounded up so that retrying after exactly that
/// long succeeds.
pub fn retry_after_ms(wait: Duration) -> u64 {
    let micros = wait.as_micros();
    u64::try_from(micros.div_ceil(1000))
        .unwrap_or(u64::MAX)
        .max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    // REQ-014-186
    #[test]
    fn a_full_bucket_allows_one_seconds_worth_then_refuses() {
        let t0 = Instant::now();
        let mut b = TokenBucket::new(5, t0);
        for _ in 0..5 {
            assert!(b.try_take(t0).is_ok());
        }
        let wait = b.try_take(t0).expect_err("sixth call in the same instant");
        assert_eq!(retry_after_ms(wait), 200, "one token refills in 1/5 s");
    }

    // REQ-014-186 REQ-014-187
    #[test]
    fn tokens_refill_continuously_and_retry_after_is_exact() {
        let t0 = Instant::now();
        let mut b = TokenBucket::new(10, t0);
        for _ in 0..10 {
            assert!(b.try_take(t0).is_ok());
        }
        let wait = b.try_take(t0).expect_err("empty");
        assert_eq!(retry_after_ms(wait), 100);
        let later = t0 + Duration::from_millis(50);
        let wait = b.try_take(later).expect_err("half a token");
        assert_eq!(retry_after_ms(wait), 50);
        // Logical instants, not the wall clock: a token refills after 100 ms of them.
        let refilled = t0 + Duration::from_millis(100);
        assert!(b.try_take(refilled).is_ok());
        assert!(b.try_take(refilled).is_err());
    }

    // REQ-014-186
    #[test]
    fn an_idle_client_cannot_bank_more_than_the_capacity() {
        let t0 = Instant::now();
        let mut b = TokenBucket::new(3, t0);
        let much_later = t0 + Duration::from_secs(3600);
        for _ in 0..3 {
            assert!(b.try_take(much_later).is_ok());
        }
        assert!(b.try_take(much_later).is_err());
        assert_eq!(b.rate(), 3.0);
    }
}
