//! Shared by the fake agent and the load generator (`agui-bench`): how an event carries
//! the time it was sent.
//!
//! The fake puts `@@<microseconds since the epoch>@@` in the text of every
//! chunk. The marker survives every path a benchmark compares (raw A2A,
//! nginx, agui-gateway's TEXT_MESSAGE_CONTENT, the Node alternative's RAW),
//! so the load generator measures added latency the same way for all.

use std::time::{SystemTime, UNIX_EPOCH};

pub fn now_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

pub fn marker(micros: u64) -> String {
    format!("@@{micros}@@")
}

/// Every send time marked in `data`.
pub fn markers(data: &[u8]) -> impl Iterator<Item = u64> + '_ {
    let mut rest = data;
    std::iter::from_fn(move || {
        loop {
            let at = memchr_pair(rest)?;
            let after = &rest[at + 2..];
            let digits = after.iter().take_while(|b| b.is_ascii_digit()).count();
            rest = &after[digits..];
            if digits > 0 && rest.starts_with(b"@@") {
                rest = &rest[2..];
                let text = std::str::from_utf8(&after[..digits]).ok()?;
                if let Ok(value) = text.parse() {
                    return Some(value);
                }
            }
        }
    })
}

fn memchr_pair(haystack: &[u8]) -> Option<usize> {
    haystack.windows(2).position(|w| w == b"@@")
}

#[cfg(test)]
mod tests {
    #[test]
    fn markers_are_found_wherever_they_are() {
        let data = br#"{"delta":"x @@123@@ y","raw":"@@45@@","bad":"@@x@@ @@"}"#;
        assert_eq!(super::markers(data).collect::<Vec<_>>(), vec![123, 45]);
    }
}
