//! Per-caller rate limiting: a token bucket per API key or JWT subject,
//! else per client address (failed authentications count there too, so
//! guessing keys is slowed as well).

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter as Governor};

/// Each caller's bucket: refilled at `per_second`, holding `burst`
/// (`[rate_limit]`, `--rate-limit-per-second`, `--rate-limit-burst`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    pub per_second: u32,
    pub burst: u32,
}

pub struct RateLimiter {
    buckets: Arc<DefaultKeyedRateLimiter<String>>,
    clock: DefaultClock,
}

impl RateLimiter {
    pub fn new(limit: RateLimit) -> RateLimiter {
        let per_second = NonZeroU32::new(limit.per_second).unwrap_or(NonZeroU32::MIN);
        let burst = NonZeroU32::new(limit.burst).unwrap_or(per_second);
        let quota = Quota::per_second(per_second).allow_burst(burst);
        RateLimiter {
            buckets: Arc::new(Governor::keyed(quota)),
            clock: DefaultClock::default(),
        }
    }

    /// Takes one token from `bucket`; when there is none, how long until
    /// there is (for `Retry-After`).
    pub fn check(&self, bucket: &str) -> Result<(), Duration> {
        // `check_key` takes the key by reference but stores an owned one
        // only for a new bucket.
        self.buckets
            .check_key(&bucket.to_owned())
            .map_err(|not_until| not_until.wait_time_from(self.clock.now()))
    }

    /// Forgets full buckets now and then, so the addresses of one-off
    /// callers do not accumulate.
    pub fn spawn_cleanup(&self, stop: tokio_util::sync::CancellationToken) {
        let buckets = self.buckets.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep(Duration::from_secs(60)) => {}
                }
                buckets.retain_recent();
                buckets.shrink_to_fit();
            }
        });
    }
}
