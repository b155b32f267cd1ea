//! The shared journal's Lua scripts: every write that must be atomic
//! across replicas. Opening a run and appending to it also keep the
//! journal's bytes within `journal_max_bytes`, as the memory journal does:
//! each run's bytes (its hash: owner, spec, input messages; its entries:
//! frames and converter input; each as Redis allocates it, `allocated`,
//! plus a fixed overhead per run and per entry for Redis's own structures)
//! are counted in `journal:sizes` and their sum in `journal:bytes`; `journal:runs` orders the runs by when they
//! opened. A write that would pass the bound first drops the oldest spent
//! runs (finished, no longer shared, or expired), whichever replica wrote
//! them; when that is not enough the write is refused and the run stops
//! being shared (it goes on on its replica). The check comes before the
//! write, so the total never passes the bound.
//!
//! Threads are bounded the memory journal's way too: `journal:threads`
//! orders them by last run; past `MAX_THREADS` (or a thread list's
//! `MAX_LISTED`) the least recently run go with their keys.
//!
//! The scripts reach keys they compute (another run's, another thread's),
//! all under the prefix they are given (`ARGV[1]`): one shard's
//! (`keys`), which on a Redis Cluster is one hash slot. The bookkeeping is
//! the shard's, and the bounds they are given the shard's share.

use redis::Script;

/// What a run's keys cost Redis beyond the bytes counted (hash, stream,
/// lease, the bookkeeping's entries), counted with the run.
const RUN_OVERHEAD: usize = 1024;
/// What one stream entry costs beyond its bytes.
const ENTRY_OVERHEAD: usize = 128;
/// What Redis's allocator (jemalloc, as Redis builds it) takes for a
/// value of `bytes` bytes: with its string header, rounded up to the size
/// class (four per doubling), so that the counted bytes are the memory
/// Redis uses, up to a quarter more than the bytes for large values.
/// Another allocator takes less: the bound then holds with room to spare.
pub(super) fn allocated(bytes: usize) -> usize {
    let bytes = bytes.saturating_add(16);
    if bytes <= 128 {
        return bytes.div_ceil(16) * 16;
    }
    // Between 2^k and 2^(k+1) the classes are 2^(k-2) apart.
    let step = 1usize << (usize::BITS - (bytes - 1).leading_zeros() - 3);
    bytes.div_ceil(step).saturating_mul(step)
}

/// What a run's hash costs: its owner, spec and input messages.
pub(super) fn run_cost(values: &[&[u8]]) -> usize {
    values.iter().map(|v| allocated(v.len())).sum::<usize>() + RUN_OVERHEAD
}

/// What one stream entry costs: its fields, in one listpack node.
pub(super) fn entry_cost(values: &[&[u8]]) -> usize {
    allocated(values.iter().map(|v| v.len()).sum()) + ENTRY_OVERHEAD
}

/// Runs one write looks at, at most, for spent ones to drop (live runs
/// are skipped: they are at most the replicas' `max_streams`).
const SCAN: usize = 4096;

/// The functions the bounded scripts share. `room` drops spent runs only
/// while the bound needs it; with `tidy` (each open) it first drops the
/// two oldest runs if they expired, so that runs which expire unevicted do
/// not pile up in the bookkeeping (each counts until it is dropped).
fn bounds() -> String {
    format!(
        "local P = ARGV[1] \
         local RUNS, SIZES, TOTAL = P .. 'journal:runs', P .. 'journal:sizes', P .. 'journal:bytes' \
         local THREADS = P .. 'journal:threads' \
         local function spent(run) \
           local f = redis.call('hmget', P .. 'run:' .. run, 'owner', 'done', 'unshared') \
           return (not f[1]) or f[2] == '1' or f[3] ~= false \
         end \
         local function drop(run) \
           redis.call('del', P .. 'run:' .. run, P .. 'run:' .. run .. ':log') \
           local size = tonumber(redis.call('hget', SIZES, run)) or 0 \
           redis.call('hdel', SIZES, run) \
           redis.call('zrem', RUNS, run) \
           return size \
         end \
         local function room(need, max, keep, tidy) \
           local total = tonumber(redis.call('get', TOTAL)) or 0 \
           if tidy then \
             for _, run in ipairs(redis.call('zrange', RUNS, 0, 1)) do \
               if redis.call('exists', P .. 'run:' .. run) == 0 then total = total - drop(run) end \
             end \
           end \
           local at, looked = 0, 0 \
           while total + need > max and looked < {SCAN} do \
             local batch = redis.call('zrange', RUNS, at, at + 63) \
             if #batch == 0 then break end \
             for _, run in ipairs(batch) do \
               looked = looked + 1 \
               if spent(run) then total = total - drop(run) else at = at + 1 end \
               if total + need <= max then break end \
             end \
           end \
           if total + need > max then \
             redis.call('set', TOTAL, total, 'PX', keep) \
             return false \
           end \
           return total \
         end \
         local function count(run, need, total, keep) \
           local now = redis.call('time') \
           redis.call('zadd', RUNS, 'NX', now[1] * 1000000 + now[2], run) \
           redis.call('hincrby', SIZES, run, need) \
           redis.call('set', TOTAL, total + need, 'PX', keep) \
           redis.call('pexpire', RUNS, keep) \
           redis.call('pexpire', SIZES, keep) \
         end \
         local function forget(ref) \
           local t = P .. 'thread:' .. ref \
           local shelf = redis.call('hget', t .. ':info', 'shelf') \
           redis.call('del', t, t .. ':info', t .. ':tasks') \
           redis.call('zrem', THREADS, ref) \
           if shelf then redis.call('zrem', P .. 'threads:' .. shelf, ref) end \
         end "
    )
}

/// A new run, held by this replica, within the journal's bytes (0 when
/// there is no room: the run is not shared).
/// KEYS: the run's hash, its lease, then (declared, named from the prefix)
/// the bookkeeping, and for a thread's run its list, info, tasks and thread
/// list. ARGV: 1 the shard's prefix, 2 run key,
/// 3 replica, 4 owner, 5 spec, 6 lease ms, 7 live ms, 8 keep ms (the
/// bookkeeping's TTL), 9 max bytes, 10 its cost (`run_cost`); for a
/// thread's run also 11 input messages, 12 thread ref, 13 thread list key,
/// 14 `run_id\tkey`, 15 thread id, 16 now ms, 17 thread lifetime ms, 18
/// runs per thread, 19 listed per list, 20 threads.
/// The thread just run is never the one forgotten: scores are the
/// replicas' clocks, and one behind the others would rank it oldest.
fn open() -> String {
    format!(
        "{} \
         local input = ARGV[11] or '' \
         local need = tonumber(ARGV[10]) \
         local total = room(need, tonumber(ARGV[9]), ARGV[8], true) \
         if not total then return 0 end \
         redis.call('hset', KEYS[1], 'owner', ARGV[4], 'spec', ARGV[5]) \
         redis.call('pexpire', KEYS[1], ARGV[7]) \
         redis.call('set', KEYS[2], ARGV[3], 'NX', 'PX', ARGV[6]) \
         count(ARGV[2], need, total, ARGV[8]) \
         if #ARGV < 20 then return 1 end \
         redis.call('hset', KEYS[1], 'input', input) \
         local ref, now, life = ARGV[12], ARGV[16], ARGV[17] \
         local t = P .. 'thread:' .. ref \
         redis.call('lpush', t, ARGV[14]) \
         redis.call('ltrim', t, 0, tonumber(ARGV[18]) - 1) \
         redis.call('pexpire', t, ARGV[8]) \
         redis.call('hsetnx', t .. ':info', 'created', now) \
         redis.call('hset', t .. ':info', 'id', ARGV[15], 'updated', now, 'shelf', ARGV[13]) \
         redis.call('pexpire', t .. ':info', life) \
         redis.call('pexpire', t .. ':tasks', life) \
         local shelf = P .. 'threads:' .. ARGV[13] \
         local gone_before = tonumber(now) - tonumber(life) \
         redis.call('zadd', shelf, now, ref) \
         redis.call('zremrangebyscore', shelf, '-inf', '(' .. gone_before) \
         for _, old in ipairs(redis.call('zrange', shelf, 0, -tonumber(ARGV[19]) - 1)) do if old ~= ref then forget(old) end end \
         redis.call('pexpire', shelf, life) \
         redis.call('zadd', THREADS, now, ref) \
         redis.call('zremrangebyscore', THREADS, '-inf', '(' .. gone_before) \
         local over = redis.call('zcard', THREADS) - tonumber(ARGV[20]) \
         if over > 0 then \
           for _, old in ipairs(redis.call('zrange', THREADS, 0, over - 1)) do if old ~= ref then forget(old) end end \
         end \
         redis.call('pexpire', THREADS, life) \
         return 1",
        bounds()
    )
}

/// One writer, in order: the lease holder appends the entry that starts
/// right after the stream's last one (else -1), or nothing (0); -2 when
/// the run is gone or the journal has no room for the entry.
/// KEYS: the lease, the log, the run's hash, then (declared, named from the
/// prefix) the bookkeeping's runs, sizes and bytes. ARGV: 1 the shard's
/// prefix, 2
/// replica, 3 first, 4 last, 5 frames, 6 input, 7 terminal, 8 ttl ms, 9
/// live ms, 10 task, 11 run key, 12 max bytes, 13 its cost (`entry_cost`),
/// 14 keep ms.
fn append() -> String {
    format!(
        "{} \
         if redis.call('get', KEYS[1]) ~= ARGV[2] then return 0 end \
         if redis.call('exists', KEYS[3]) == 0 then return -2 end \
         local top = redis.call('xrevrange', KEYS[2], '+', '-', 'COUNT', 1) \
         local last = 0 \
         if #top > 0 then last = tonumber(string.match(top[1][1], '^0%-(%d+)$')) or -1 end \
         if last + 1 ~= tonumber(ARGV[3]) then return -1 end \
         local need = tonumber(ARGV[13]) \
         local total = room(need, tonumber(ARGV[12]), ARGV[14], false) \
         if not total then return -2 end \
         redis.call('xadd', KEYS[2], '0-' .. ARGV[4], 'f', ARGV[3], 'o', ARGV[5], 'i', ARGV[6], 't', ARGV[7]) \
         count(ARGV[11], need, total, ARGV[14]) \
         if ARGV[7] == '1' then \
           redis.call('hset', KEYS[3], 'done', '1') \
           redis.call('pexpire', KEYS[3], ARGV[8]) \
           redis.call('pexpire', KEYS[2], ARGV[8]) \
           redis.call('del', KEYS[1]) \
         elseif last == 0 then \
           redis.call('pexpire', KEYS[2], ARGV[9]) \
         end \
         if ARGV[10] ~= '' then redis.call('hset', KEYS[3], 'task', ARGV[10]) end \
         return 1",
        bounds()
    )
}

/// Renew or release only a lease still ours (Redis 7.0 has no
/// compare-and-expire); the run's keys live on with it, and the shard's
/// bookkeeping too, so that a long quiet run keeps its bytes counted.
/// KEYS: 1 the lease, 2-4 the bookkeeping (runs, sizes, bytes), 5 the
/// run's hash (whose `stop` a stop on any replica sets: `request_stop`),
/// 6 its log, 7 its thread's run list if any. ARGV: 1 the shard's prefix,
/// 2 replica, 3 lease ms, 4 live ms, 5 keep ms.
fn renew() -> String {
    "if redis.call('get', KEYS[1]) == ARGV[2] then \
       redis.call('pexpire', KEYS[1], ARGV[3]) \
       for i = 2, 4 do redis.call('pexpire', KEYS[i], ARGV[5]) end \
       for i = 5, #KEYS do redis.call('pexpire', KEYS[i], ARGV[4]) end \
       if redis.call('hget', KEYS[5], 'stop') == '1' then return 2 end \
       return 1 \
     end return 0"
        .to_owned()
}

/// The scripts, loaded once per journal.
pub(super) struct Scripts {
    pub open: Script,
    pub append: Script,
    pub renew: Script,
    /// Only a run still going, whose hash exists (no key without a TTL).
    pub stop: Script,
    pub release: Script,
    /// Marks a run unshared, only while its hash exists.
    pub unshare: Script,
}

impl Scripts {
    pub(super) fn new() -> Scripts {
        Scripts {
            open: Script::new(&open()),
            append: Script::new(&append()),
            renew: Script::new(&renew()),
            stop: Script::new(
                "if redis.call('exists', KEYS[1]) == 1 and redis.call('hget', KEYS[1], 'done') ~= '1' then \
                   redis.call('hset', KEYS[1], 'stop', '1') \
                   return 1 \
                 end return 0",
            ),
            release: Script::new(
                "if redis.call('get', KEYS[1]) == ARGV[1] then \
                   return redis.call('del', KEYS[1]) \
                 end return 0",
            ),
            unshare: Script::new(
                "if redis.call('exists', KEYS[1]) == 1 then \
                   redis.call('hset', KEYS[1], 'unshared', '1') \
                 end return 0",
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_follow_the_allocator_s_size_classes() {
        assert_eq!(allocated(0), 16);
        assert_eq!(allocated(100), 128);
        assert_eq!(allocated(130), 160);
        assert_eq!(allocated(240), 256);
        // 900 KiB takes the 1 MiB class; just under 896 KiB takes 896 KiB.
        assert_eq!(allocated(900 << 10), 1 << 20);
        assert_eq!(allocated((896 << 10) - 16), 896 << 10);
        for n in [1usize, 17, 1000, 5000, 70_000, 3 << 20] {
            let taken = allocated(n);
            assert!(
                taken >= n + 16 && taken <= (n + 16) * 5 / 4 + 16,
                "{n}: {taken}"
            );
        }
        assert_eq!(entry_cost(&[b"ab", b"cd"]), allocated(4) + ENTRY_OVERHEAD);
        assert_eq!(
            run_cost(&[b"ab", b""]),
            allocated(2) + allocated(0) + RUN_OVERHEAD
        );
    }
}
