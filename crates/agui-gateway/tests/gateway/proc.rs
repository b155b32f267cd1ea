//! What `/proc` says of a process the tests started: its memory and CPU.

use std::time::Duration;

/// A process's status field in KiB (`VmRSS`, `VmHWM`), from `/proc`.
fn status_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// A process's resident memory now.
pub fn rss_kib(pid: u32) -> u64 {
    status_kib(pid, "VmRSS:")
}

/// A process's peak resident memory.
pub fn peak_rss_mib(pid: u32) -> u64 {
    status_kib(pid, "VmHWM:") / 1024
}

/// The CPU a process has used (user and system), from `/proc`.
pub fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    // utime and stime: fields 14 and 15 of the whole line, in clock ticks
    // (100 a second on Linux).
    let ticks: u64 = fields
        .get(11..13)
        .into_iter()
        .flatten()
        .filter_map(|f| f.parse::<u64>().ok())
        .sum();
    Duration::from_millis(ticks * 10)
}
