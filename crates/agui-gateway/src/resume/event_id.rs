//! `Last-Event-ID`: the header a reconnect names the last frame it got by.

use agui_journal::ResumeError;
use axum::http::HeaderMap;

/// `Last-Event-ID: <run key>.<n>` as the gateway writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventId {
    pub key: String,
    pub n: u64,
}

impl EventId {
    pub fn parse(text: &str) -> Option<EventId> {
        let (key, n) = text.trim().rsplit_once('.')?;
        let key_ok = key.len() == 16 && key.bytes().all(|b| b.is_ascii_hexdigit());
        let n = n.parse().ok().filter(|_| key_ok)?;
        Some(EventId {
            key: key.to_owned(),
            n,
        })
    }

    /// The request's `Last-Event-ID`, if it sent one: an id the gateway
    /// did not write names no run it keeps.
    pub fn from_headers(headers: &HeaderMap) -> Option<Result<EventId, ResumeError>> {
        let value = headers.get("last-event-id")?;
        Some(
            value
                .to_str()
                .ok()
                .and_then(EventId::parse)
                .ok_or(ResumeError::Unknown),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_ids_parse_only_as_written() {
        assert_eq!(
            EventId::parse("00ff00ff00ff00ff.12"),
            Some(EventId {
                key: "00ff00ff00ff00ff".to_owned(),
                n: 12
            })
        );
        for bad in [
            "",
            "12",
            "00ff00ff00ff00ff",
            "00ff00ff00ff00ff.",
            "00ff00ff00ff00f.1",
            "zzff00ff00ff00ff.1",
            "00ff00ff00ff00ff.-1",
            "00ff00ff00ff00ff.99999999999999999999999",
        ] {
            assert_eq!(EventId::parse(bad), None, "{bad:?}");
        }
    }
}
