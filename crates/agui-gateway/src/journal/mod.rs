//! The run journal: every frame of a converted run, kept so that a client
//! that lost its connection continues from the last id it got, a run goes
//! on while nobody listens (detach), and `connect` replays a thread's run.
//!
//! - A run's frames are appended by whoever reads its upstream (the
//!   response body while the client is attached, a pump task once it is
//!   gone) *before* any client sees them: any id a client holds can be
//!   continued from.
//! - Frames are stored as the chunks the converter wrote (one per upstream
//!   read); a resume from inside a chunk slices it at the frame's `id:`
//!   line, so appending costs no scan.
//! - Bounded: runs kept, bytes per run, bytes in all, time a finished run
//!   stays.

mod follow;
mod memory;

use std::time::Duration;

use a2a_agui::ErrorCode;
use axum::http::{HeaderMap, StatusCode};
use sha2::{Digest, Sha256};

pub use follow::follow;
pub use memory::{MemoryJournal, RunLog};

use crate::error::ApiError;

/// Where runs are journaled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// No journal: ids are written, but no run can be continued (410).
    Off,
    /// In this process (the default).
    Memory,
}

impl Backend {
    pub fn parse(text: &str) -> Option<Backend> {
        match text {
            "memory" => Some(Backend::Memory),
            "off" => Some(Backend::Off),
            _ => None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct JournalConfig {
    pub backend: Backend,
    /// How long a run whose client went away goes on, journaled, for a
    /// reconnect; then it is cancelled (with `cancel_on_disconnect`) or
    /// dropped. Zero: runs end with their client, as without a journal.
    pub detach_grace: Duration,
    pub limits: JournalLimits,
}

impl Default for JournalConfig {
    fn default() -> JournalConfig {
        JournalConfig {
            backend: Backend::Memory,
            detach_grace: Duration::from_secs(60),
            limits: JournalLimits::default(),
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct JournalLimits {
    /// Runs kept, live or finished; past it the oldest finished run goes.
    pub max_runs: usize,
    /// Frame bytes kept per run; past it its oldest frames go (a resume
    /// from before them gets 410).
    pub max_run_bytes: usize,
    /// Frame bytes kept in all; past it finished runs go, oldest first,
    /// then the growing run's oldest frames.
    pub max_bytes: usize,
    /// How long a finished run can still be resumed or connected to.
    pub ttl: Duration,
}

impl Default for JournalLimits {
    fn default() -> JournalLimits {
        JournalLimits {
            max_runs: 10_000,
            max_run_bytes: 1 << 20,
            max_bytes: 256 << 20,
            ttl: Duration::from_secs(300),
        }
    }
}

/// A 256-bit digest of length-prefixed fields: stable across processes
/// (a shared journal compares them between replicas), no field can run
/// into the next.
fn digest(fields: &[&[u8]]) -> [u8; 32] {
    let mut hash = Sha256::new();
    for field in fields {
        hash.update((field.len() as u64).to_be_bytes());
        hash.update(field);
    }
    hash.finalize().into()
}

/// Who calls, as far as runs go: the authenticated caller
/// (`edge::scope`), or with authentication off (scope empty) the client's
/// `Authorization`, which the agent may judge. A run is continued, and a
/// thread's runs are found, only by the same caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Caller([u8; 32]);

impl Caller {
    pub fn of(scope: &str, headers: &HeaderMap) -> Caller {
        let credential = match scope {
            "" => headers
                .get(axum::http::header::AUTHORIZATION)
                .map_or(&b""[..], |v| v.as_bytes()),
            _ => b"",
        };
        Caller(digest(&[scope.as_bytes(), credential]))
    }
}

/// Who started a run and with what request: a reconnect must repeat both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner([u8; 32]);

impl Owner {
    pub fn of(agent: &str, caller: &Caller, method: &str, uri: &str, body: &[u8]) -> Owner {
        Owner(digest(&[
            agent.as_bytes(),
            &caller.0,
            method.as_bytes(),
            uri.as_bytes(),
            body,
        ]))
    }
}

/// An AG-UI thread as `connect` finds it: agent, caller and thread id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ThreadRef([u8; 32]);

impl ThreadRef {
    pub fn new(agent: &str, caller: &Caller, thread_id: &str) -> ThreadRef {
        ThreadRef(digest(&[agent.as_bytes(), &caller.0, thread_id.as_bytes()]))
    }
}

/// Who made a request, for the journal: the caller, and the owner a
/// run it starts would have.
#[derive(Debug, Clone, Copy)]
pub struct RunBy {
    pub caller: Caller,
    pub owner: Owner,
}

/// What the journal keeps about a new run besides its frames.
#[derive(Debug, Clone)]
pub struct RunIdentity {
    pub owner: Owner,
    /// For `/agui` runs: the thread and the run id the client chose.
    pub thread: Option<(ThreadRef, String)>,
}

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

    pub fn from_headers(headers: &HeaderMap) -> Option<Result<EventId, ApiError>> {
        let value = headers.get("last-event-id")?;
        Some(
            value
                .to_str()
                .ok()
                .and_then(EventId::parse)
                .ok_or_else(|| ResumeError::Unknown.into()),
        )
    }
}

/// Why a run cannot be continued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResumeError {
    /// Not an id of this gateway, or its run is gone (finished longer ago
    /// than the TTL, evicted, never existed, or the journal is off).
    Unknown,
    /// The run is kept, but no longer from that event on.
    TooOld,
    /// Another request or another caller started that run.
    Mismatch,
}

impl From<ResumeError> for ApiError {
    fn from(err: ResumeError) -> ApiError {
        match err {
            ResumeError::Unknown => ApiError::new(
                StatusCode::GONE,
                ErrorCode::RunNotResumable,
                "the gateway keeps no run with that Last-Event-ID (finished too long ago, or never here): start a new run",
            ),
            ResumeError::TooOld => ApiError::new(
                StatusCode::GONE,
                ErrorCode::RunNotResumable,
                "the run no longer keeps the events after that Last-Event-ID: start a new run",
            ),
            ResumeError::Mismatch => ApiError::new(
                StatusCode::CONFLICT,
                ErrorCode::RunMismatch,
                "that Last-Event-ID belongs to a run of another request: repeat the original request exactly",
            ),
        }
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

    #[test]
    fn owners_differ_by_every_field() {
        let none = HeaderMap::new();
        let anyone = Caller::of("", &none);
        let base = Owner::of("a", &anyone, "POST", "/agui", b"{}");
        assert_ne!(base, Owner::of("b", &anyone, "POST", "/agui", b"{}"));
        assert_ne!(
            base,
            Owner::of("a", &Caller::of("k", &none), "POST", "/agui", b"{}")
        );
        assert_ne!(base, Owner::of("a", &anyone, "PUT", "/agui", b"{}"));
        assert_ne!(base, Owner::of("a", &anyone, "POST", "/x", b"{}"));
        assert_ne!(base, Owner::of("a", &anyone, "POST", "/agui", b"{ }"));
        // Fields cannot run into each other.
        assert_ne!(
            Owner::of("a", &anyone, "POST", "/aguiX", b"{}"),
            Owner::of("a", &anyone, "POST", "/agui", b"X{}")
        );
        let mut bearer = HeaderMap::new();
        bearer.insert("authorization", "Bearer x".parse().unwrap());
        let alice = Caller::of("", &bearer);
        assert_ne!(anyone, alice);
        assert_ne!(base, Owner::of("a", &alice, "POST", "/agui", b"{}"));
        assert_ne!(
            ThreadRef::new("a", &anyone, "t"),
            ThreadRef::new("a", &alice, "t")
        );
        // With an authenticated caller, the caller is the identity.
        assert_eq!(Caller::of("k", &none), Caller::of("k", &bearer));
    }
}
