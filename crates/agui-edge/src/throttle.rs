//! Log lines that a client can cause at any rate (refused connections,
//! refused origins) are written once a second at most.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

pub struct LogThrottle {
    start: Instant,
    /// The last second (since `start`, plus one) that logged.
    last: AtomicU64,
}

impl LogThrottle {
    pub fn new() -> LogThrottle {
        LogThrottle {
            start: Instant::now(),
            last: AtomicU64::new(0),
        }
    }

    /// True at most once per second.
    pub fn due(&self) -> bool {
        let now = self.start.elapsed().as_secs() + 1;
        self.last.swap(now, Ordering::Relaxed) != now
    }
}

impl Default for LogThrottle {
    fn default() -> LogThrottle {
        LogThrottle::new()
    }
}
