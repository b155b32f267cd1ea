//! Where the journal's keys live: their names, and on a Redis Cluster
//! their shards.
//!
//! On one Redis every key is under `agui-gateway:`, as it always was. On a
//! Redis Cluster a script may only touch keys of one hash slot, and the
//! journal's scripts touch a run's keys, its thread's, and the bookkeeping
//! that bounds them (other runs, other threads they evict). So the keys
//! are split into `SHARDS` shards, each under its own hash tag
//! (`agui-gateway:{s3.28}:`): a shard is a small journal of its own, with
//! its own bookkeeping at a `SHARDS`th of the bounds. A run's shard is the
//! first hex digit of its key, which the gateway chooses to be its
//! thread's (`run_key`): a run and its thread are always in one shard.
//!
//! Each shard's tag falls in the middle of its sixteenth of the 16,384
//! slots, so a cluster whose slots are split evenly (as `redis-cli
//! --cluster create` does) holds the shards evenly, up to 16 primaries.

use crate::identity::{ThreadListKey, ThreadRef};

const PREFIX: &str = "agui-gateway:";

/// How many shards a Redis Cluster's keys are split into.
pub const SHARDS: usize = 16;

/// Shard `n`'s hash tag: its slot (CRC16 of the tag, mod 16,384) is in
/// `n * 1024 + 256 .. n * 1024 + 768` (checked below).
const TAGS: [&str; SHARDS] = [
    "s0.10", "s1.143", "s2.23", "s3.28", "s4.8", "s5.78", "s6.40", "s7.58", "s8.23", "s9.28",
    "sa.78", "sb.9", "sc.59", "sd.69", "se.0", "sf.49",
];

/// How the keys are laid out: one journal on one Redis, or `SHARDS`
/// journals on a cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    Single,
    Sharded,
}

/// The keys of one shard (the one journal on a single Redis).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shard {
    /// Every key of the shard starts with it; the scripts are given it.
    pub prefix: String,
}

impl Layout {
    /// How many shards the bounds are split over.
    pub fn shards(self) -> usize {
        match self {
            Layout::Single => 1,
            Layout::Sharded => SHARDS,
        }
    }

    /// Shard number `n` (`n < shards()`).
    pub fn shard(self, n: usize) -> Shard {
        match self {
            Layout::Single => Shard {
                prefix: PREFIX.to_owned(),
            },
            Layout::Sharded => Shard {
                prefix: format!("{PREFIX}{{{}}}:", TAGS[n % SHARDS]),
            },
        }
    }

    /// Every shard, each once.
    pub fn every_shard(self) -> impl Iterator<Item = Shard> {
        (0..self.shards()).map(move |n| self.shard(n))
    }

    /// The shard of run `key`: its first hex digit's.
    pub fn of_run(self, key: &str) -> Shard {
        self.shard(shard_digit(key))
    }

    /// The shard of a thread: its digest's first four bits.
    pub fn of_thread(self, thread: &ThreadRef) -> Shard {
        self.shard(usize::from(thread.shard_digit()))
    }
}

impl Shard {
    pub fn run(&self, key: &str) -> String {
        format!("{}run:{key}", self.prefix)
    }

    pub fn log(&self, key: &str) -> String {
        format!("{}run:{key}:log", self.prefix)
    }

    pub fn lease(&self, key: &str) -> String {
        format!("{}lease:{key}", self.prefix)
    }

    pub fn thread(&self, thread: &ThreadRef) -> String {
        format!("{}thread:{}", self.prefix, thread.to_hex())
    }

    pub fn thread_info(&self, hex: &str) -> String {
        format!("{}thread:{hex}:info", self.prefix)
    }

    pub fn thread_tasks(&self, thread: &ThreadRef) -> String {
        format!("{}thread:{}:tasks", self.prefix, thread.to_hex())
    }

    /// A caller's threads with an agent that are in this shard.
    pub fn thread_list(&self, list: &ThreadListKey) -> String {
        format!("{}threads:{}", self.prefix, list.to_hex())
    }

    /// The shard's bookkeeping (`scripts`): its runs by age, their sizes,
    /// their total, its threads by last run. Declared to the scripts that
    /// touch them, so that a cluster moving the shard's slot answers those
    /// scripts `ASK` or `TRYAGAIN` before they run, not midway.
    pub fn bookkeeping(&self) -> [String; 4] {
        ["runs", "sizes", "bytes", "threads"].map(|name| format!("{}journal:{name}", self.prefix))
    }

    /// This replica's probe keys (`health`).
    pub fn probe(&self, replica: &str) -> String {
        format!("{}probe:{replica}", self.prefix)
    }
}

/// Run `key`'s shard digit: its first hex digit (a key that is no run's,
/// which no reconnect can name, goes to shard 0).
pub fn shard_digit(key: &str) -> usize {
    key.chars()
        .next()
        .and_then(|c| c.to_digit(16))
        .map_or(0, |digit| digit as usize)
}

/// The hash slot of shard `n`'s keys on a cluster: CRC16 (XMODEM) of its
/// tag, mod 16,384, as Redis Cluster computes it.
pub fn shard_slot(n: usize) -> u16 {
    let mut crc: u16 = 0;
    for byte in TAGS[n % SHARDS].bytes() {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc % 16_384
}

/// A budget's key (`crate::budget` names it with its own hash tag), in
/// every layout.
pub fn budget(key: &str) -> String {
    format!("{PREFIX}{key}")
}

/// A new run's key from 64 random bits: 16 hex digits, the first of them
/// its thread's shard digit, so that the run's keys and its thread's share
/// a shard on a cluster.
pub fn run_key(random: u64, thread: Option<&ThreadRef>) -> String {
    let random = match thread {
        Some(thread) => (random & (u64::MAX >> 4)) | (u64::from(thread.shard_digit()) << 60),
        None => random,
    };
    format!("{random:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::CallerDigest;

    #[test]
    fn each_shard_sits_in_the_middle_of_its_sixteenth_of_the_slots() {
        for (n, tag) in TAGS.iter().enumerate() {
            let at = usize::from(shard_slot(n));
            assert!(
                (n * 1024 + 256..n * 1024 + 768).contains(&at),
                "{tag}: {at}"
            );
        }
    }

    #[test]
    fn a_run_and_its_thread_share_a_shard() {
        let caller = CallerDigest::of_scope("alice");
        for id in ["a", "b", "c", "thread-42", ""] {
            let thread = ThreadRef::new("agent", &caller, id);
            for random in [0, u64::MAX, 0x0123_4567_89ab_cdef] {
                let key = run_key(random, Some(&thread));
                assert_eq!(key.len(), 16);
                let sharded = Layout::Sharded;
                assert_eq!(sharded.of_run(&key), sharded.of_thread(&thread), "{id}");
                assert_eq!(Layout::Single.of_run(&key), Layout::Single.shard(0));
            }
        }
        assert_eq!(run_key(0xfedc_ba98_7654_3210, None), "fedcba9876543210");
        let shard = Layout::Sharded.of_run("3fff");
        assert_eq!(shard.run("3fff"), "agui-gateway:{s3.28}:run:3fff");
        assert_eq!(
            Layout::Single.of_run("3fff").run("3fff"),
            "agui-gateway:run:3fff"
        );
    }
}
