//! Random ids that must not collide across runs or replicas.

use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

static DRAWS: AtomicU64 = AtomicU64::new(0);

/// A random 64-bit value for ids that must not collide across runs (JSON-RPC
/// ids, message ids, minted AG-UI ids): the standard library's per-process
/// keyed hasher (OS-seeded) over a counter, so no extra dependency.
pub fn random_u64() -> u64 {
    let mut hasher = std::hash::RandomState::new().build_hasher();
    hasher.write_u64(DRAWS.fetch_add(1, Ordering::Relaxed));
    hasher.finish()
}
