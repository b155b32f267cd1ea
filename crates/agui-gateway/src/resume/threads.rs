//! A caller's threads with an agent, the latest to run first: the ones the
//! journal records (the shared journal's when there is one), and, for an
//! A2A 1.0 agent, the contexts of the tasks it lists for the caller that a
//! message the gateway sent for this caller's thread started
//! (`ThreadRef::owner_tag`): a thread is listed after a restart too. A
//! caller with no identity gets no list.

use std::collections::HashMap;

use agui_journal::{CallerDigest, MAX_LISTED, ThreadListKey, ThreadRef, ThreadSummary};
use serde_json::Value;

use super::MAX_ID_BYTES;
use super::conversation::{AGENT_DEADLINE, result, started_by};
use crate::config::A2aVersion;
use crate::state::AppState;
use crate::upstream::Call;
use crate::upstream::outbound::Forwarded;
use crate::upstream::route::Route;
use crate::upstream::{Agent, answer};

/// The caller's threads with `agent`.
pub async fn threads(
    state: &AppState,
    agent: &Agent,
    caller: &CallerDigest,
    forwarded: &Forwarded,
) -> Vec<ThreadSummary> {
    // Anonymous callers are all one caller: a list would show each of
    // them everyone's thread ids, which are the keys to the threads.
    if caller.is_anonymous() {
        return Vec::new();
    }
    let list = ThreadListKey::new(agent.name(), caller);
    let mut listed = match &state.redis {
        Some(shared) => shared.threads(&list).await.unwrap_or_else(|err| {
            tracing::warn!("listing a caller's shared threads failed: {err}");
            Vec::new()
        }),
        None => state
            .journal
            .as_ref()
            .map(|journal| journal.threads(&list))
            .unwrap_or_default(),
    };
    let route = agent.route().await;
    if route.version() == A2aVersion::V10 {
        for found in from_agent(state, (agent, &route), caller, forwarded).await {
            match listed.iter_mut().find(|t| t.id == found.id) {
                Some(known) => {
                    known.created_ms = known.created_ms.min(found.created_ms);
                    known.updated_ms = known.updated_ms.max(found.updated_ms);
                }
                None => listed.push(found),
            }
        }
        listed.sort_by(|a, b| b.updated_ms.cmp(&a.updated_ms).then(a.id.cmp(&b.id)));
        listed.truncate(MAX_LISTED);
    }
    listed
}

/// One page of the tasks the agent lists for the caller, by context.
async fn from_agent(
    state: &AppState,
    (agent, route): (&Agent, &Route),
    caller: &CallerDigest,
    forwarded: &Forwarded,
) -> Vec<ThreadSummary> {
    let limit = state.config.limits.max_event_bytes;
    let call = Call::List {
        context: None,
        page_token: "",
    };
    // A replay's deadline, not the agent's idle timeout: a page load waits
    // on this list.
    let answer = agent.answer(route, call, forwarded, limit);
    let answer = tokio::time::timeout(AGENT_DEADLINE, answer).await;
    let Some(page) = answer
        .ok()
        .flatten()
        .and_then(|answer| result(&answer, &mut { answer::MAX_ELEMENTS }))
    else {
        return Vec::new();
    };
    let mut contexts: HashMap<String, ThreadSummary> = HashMap::new();
    for task in page
        .get("tasks")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(context) = task.get("contextId").and_then(Value::as_str) else {
            continue;
        };
        let owner = ThreadRef::new(agent.name(), caller, context).owner_tag();
        if context.len() > MAX_ID_BYTES || !started_by(task, &owner) {
            continue;
        }
        let at = task
            .pointer("/status/timestamp")
            .and_then(Value::as_str)
            .and_then(unix_ms_of)
            .unwrap_or_default();
        let entry = contexts
            .entry(context.to_owned())
            .or_insert_with(|| ThreadSummary {
                id: context.to_owned(),
                created_ms: at,
                updated_ms: at,
            });
        entry.created_ms = entry.created_ms.min(at);
        entry.updated_ms = entry.updated_ms.max(at);
    }
    contexts.into_values().collect()
}

/// An RFC 3339 timestamp (`2026-11-25T10:00:00.123456+00:00`, `…Z`) as
/// milliseconds since the epoch; its offset honoured. Every field is held
/// to its range (the agent writes it), so the arithmetic cannot overflow.
fn unix_ms_of(text: &str) -> Option<u64> {
    let number = |s: &str| s.parse::<i64>().ok();
    let ranged = |s: &str, most: i64| number(s).filter(|n| (0..=most).contains(n));
    let (date, time) = text.split_once(['T', 't', ' '])?;
    let mut ymd = date.splitn(3, '-');
    let (year, month, day) = (
        ranged(ymd.next()?, 9999)?,
        ranged(ymd.next()?, 12)?.max(1),
        ranged(ymd.next()?, 31)?.max(1),
    );
    let (clock, offset_secs) = match time.find(['Z', 'z', '+', '-']) {
        Some(at) => {
            let (clock, zone) = time.split_at(at);
            let offset = match zone.as_bytes()[0] {
                b'Z' | b'z' => 0,
                sign => {
                    let (h, m) = zone[1..].split_once(':').unwrap_or((&zone[1..], "0"));
                    let secs = ranged(h, 23)? * 3600 + ranged(m, 59)? * 60;
                    if sign == b'-' { -secs } else { secs }
                }
            };
            (clock, offset)
        }
        None => (time, 0),
    };
    let mut hms = clock.splitn(3, ':');
    let (hour, minute) = (ranged(hms.next()?, 23)?, ranged(hms.next()?, 59)?);
    let seconds = hms.next().unwrap_or("0");
    let (whole, fraction) = seconds.split_once('.').unwrap_or((seconds, ""));
    let millis = format!("{fraction:0<3}")
        .get(..3)
        .and_then(number)
        .unwrap_or(0);
    // Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + hour * 3600 + minute * 60 + ranged(whole, 60)? - offset_secs;
    u64::try_from(secs * 1000 + millis).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_read_with_their_offset() {
        assert_eq!(unix_ms_of("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            unix_ms_of("2026-11-25T00:00:00.123456+00:00"),
            Some(1_795_564_800_123)
        );
        assert_eq!(
            unix_ms_of("2026-11-25T01:00:00+01:00"),
            Some(1_795_564_800_000)
        );
        assert_eq!(unix_ms_of("2000-02-29T00:00:00Z"), Some(951_782_400_000));
        for bad in [
            "",
            "yesterday",
            "2026-11-25",
            "2026-xx-25T00:00:00Z",
            "9223372036854775807-01-01T00:00:00Z",
            "2026-01-01T00:00:00+9999999999999:00",
            "2026-01-01T99999999999999:00:00Z",
        ] {
            assert_eq!(unix_ms_of(bad), None, "{bad:?}");
        }
    }
}
