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
//! - A thread's replay, built from its runs, is held once for all who read
//!   it (`replays`).

mod follow;
mod memory;
pub mod redis;
pub mod replays;
mod threads;

use axum::http::HeaderMap;
use sha2::{Digest, Sha256};

pub use follow::{follow, joined};
pub use memory::{MemoryJournal, RunLog};
pub use threads::{MAX_LISTED, ThreadSummary, unix_ms};

pub use crate::config::{Backend, JournalConfig, JournalLimits};

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

fn hex(bytes: &[u8; 32]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn from_hex(text: &str) -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    if text.len() != 64 || !text.is_ascii() {
        return None;
    }
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// What was fed to a run's converter, recorded with the frames it
/// produced, so that another replica can rebuild the converter by feeding
/// the same again (the converter is deterministic; only its timestamps
/// differ, and the rebuild's output is thrown away).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputOp {
    /// A chunk of an upstream event stream.
    Sse,
    /// A whole JSON document (a non-streaming body, a task read on
    /// re-attaching).
    Json,
    /// `StreamConverter::reattach`.
    Reattach,
}

impl InputOp {
    fn tag(self) -> u8 {
        match self {
            InputOp::Sse => 1,
            InputOp::Json => 2,
            InputOp::Reattach => 3,
        }
    }

    /// Appends one op (tag, 4-byte length, bytes); an op too large to
    /// record is left out (the rebuild then falls short and says so).
    pub fn record(self, buffer: &mut Vec<u8>, bytes: &[u8]) {
        if let Ok(len) = u32::try_from(bytes.len()) {
            buffer.push(self.tag());
            buffer.extend_from_slice(&len.to_be_bytes());
            buffer.extend_from_slice(bytes);
        }
    }

    /// The ops of a recording, in order; `None` at the first malformed one.
    pub fn replay(mut recorded: &[u8], mut each: impl FnMut(InputOp, &[u8])) -> Option<()> {
        while let Some((&tag, rest)) = recorded.split_first() {
            let op = match tag {
                1 => InputOp::Sse,
                2 => InputOp::Json,
                3 => InputOp::Reattach,
                _ => return None,
            };
            let len = rest.get(..4)?;
            let len = u32::from_be_bytes([len[0], len[1], len[2], len[3]]) as usize;
            let bytes = rest.get(4..4 + len)?;
            each(op, bytes);
            recorded = &rest[4 + len..];
        }
        Some(())
    }
}

/// Where frame `n` starts in a chunk: every frame opens with its id line.
pub fn frame_start(chunk: &[u8], key: &str, n: u64) -> Option<usize> {
    let needle = format!("id: {key}.{n}\n");
    let needle = needle.as_bytes();
    if chunk.starts_with(needle) {
        return Some(0);
    }
    // Frames end with a blank line, so a frame's start follows "\n\n".
    chunk
        .windows(needle.len() + 2)
        .position(|w| w.starts_with(b"\n\n") && &w[2..] == needle)
        .map(|at| at + 2)
}

/// Headers that may carry who the client is, to an agent that judges it:
/// with the gateway's authentication off they are the caller's identity.
const CREDENTIAL_HEADERS: [&str; 5] = [
    "authorization",
    "proxy-authorization",
    "cookie",
    "x-api-key",
    "api-key",
];

/// Who calls, as far as runs go: the authenticated caller
/// (`http::gate::scope`), or with authentication off (scope empty) every
/// credential-carrying header the client sent, which the agent may judge.
/// A run is continued, and a thread's runs are found, only by the same
/// caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CallerDigest {
    digest: [u8; 32],
    /// No identity at all (authentication off, no credential header):
    /// every such caller is the same one.
    anonymous: bool,
}

impl CallerDigest {
    pub fn of(scope: &str, headers: &HeaderMap) -> CallerDigest {
        let mut fields: Vec<&[u8]> = vec![scope.as_bytes()];
        let mut anonymous = scope.is_empty();
        if scope.is_empty() {
            for name in CREDENTIAL_HEADERS {
                fields.push(name.as_bytes());
                for value in headers.get_all(name) {
                    anonymous = false;
                    fields.push(value.as_bytes());
                }
            }
        }
        CallerDigest {
            digest: digest(&fields),
            anonymous,
        }
    }

    /// Whether the caller has no identity: whatever it could list, every
    /// other anonymous caller could list too.
    pub fn is_anonymous(&self) -> bool {
        self.anonymous
    }
}

/// Who started a run and with what request: a reconnect must repeat both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner([u8; 32]);

impl Owner {
    pub fn to_hex(&self) -> String {
        hex(&self.0)
    }

    pub fn from_hex(text: &str) -> Option<Owner> {
        from_hex(text).map(Owner)
    }

    pub fn of(agent: &str, caller: &CallerDigest, method: &str, uri: &str, body: &[u8]) -> Owner {
        Owner(digest(&[
            agent.as_bytes(),
            &caller.digest,
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
    pub fn to_hex(&self) -> String {
        hex(&self.0)
    }

    pub fn new(agent: &str, caller: &CallerDigest, thread_id: &str) -> ThreadRef {
        ThreadRef(digest(&[
            agent.as_bytes(),
            &caller.digest,
            thread_id.as_bytes(),
        ]))
    }

    /// What ends the A2A `messageId` of every message the gateway sends
    /// for the thread: a replay from the agent's stored tasks shows only
    /// tasks that carry it, so a caller who learns another's thread id
    /// (which is the A2A `contextId`) still cannot read that thread
    /// through the gateway. A digest of the digest: it reveals nothing of
    /// the caller.
    pub fn owner_tag(&self) -> String {
        hex(&digest(&[b"owner", &self.0]))[..32].to_owned()
    }

    /// The A2A `messageId` of a message the gateway sends for the thread.
    pub fn message_id(&self, nonce: u64) -> String {
        format!("agui-{nonce:016x}-{}", self.owner_tag())
    }

    /// Whether `message_id` is one the gateway sent for the thread whose
    /// owner tag is `tag` (`message_id`).
    pub fn is_sent(message_id: &str, tag: &str) -> bool {
        message_id.starts_with("agui-") && message_id.ends_with(tag)
    }
}

/// Who made a request, for the journal: the caller, and the owner a
/// run it starts would have.
#[derive(Debug, Clone, Copy)]
pub struct RunBy {
    pub caller: CallerDigest,
    pub owner: Owner,
}

/// Whose threads a list shows: one agent's, for one caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Shelf {
    digest: [u8; 32],
    /// Every anonymous caller's: shared by all of them, listed to none.
    anonymous: bool,
}

impl Shelf {
    pub fn new(agent: &str, caller: &CallerDigest) -> Shelf {
        Shelf {
            digest: digest(&[b"threads", agent.as_bytes(), &caller.digest]),
            anonymous: caller.anonymous,
        }
    }

    pub fn to_hex(&self) -> String {
        hex(&self.digest)
    }

    pub fn is_anonymous(&self) -> bool {
        self.anonymous
    }
}

/// The thread a run belongs to, as the journal keeps it.
#[derive(Debug, Clone)]
pub struct RunThread {
    pub thread: ThreadRef,
    /// The thread's id as the client wrote it (a thread list shows it).
    pub id: String,
    pub shelf: Shelf,
    /// The run id the client chose.
    pub run_id: String,
    /// The messages of the run's input, a JSON array as the client sent
    /// them (a thread's replay shows them before the run's own); empty
    /// when they were too many to keep (counted in the journal's bytes).
    pub input: bytes::Bytes,
}

/// What the journal keeps about a new run besides its frames.
#[derive(Debug, Clone)]
pub struct RunIdentity {
    pub owner: Owner,
    /// For AG-UI runs: their thread.
    pub thread: Option<RunThread>,
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
    fn digests_and_input_ops_round_trip() {
        let owner = Owner::of(
            "a",
            &CallerDigest::of("", &HeaderMap::new()),
            "POST",
            "/",
            b"",
        );
        assert_eq!(Owner::from_hex(&owner.to_hex()), Some(owner));
        assert_eq!(Owner::from_hex("zz"), None);
        let mut recorded = Vec::new();
        InputOp::Sse.record(&mut recorded, b"data: 1\n\n");
        InputOp::Reattach.record(&mut recorded, b"");
        InputOp::Json.record(&mut recorded, b"{}");
        let mut ops = Vec::new();
        assert!(InputOp::replay(&recorded, |op, bytes| ops.push((op, bytes.to_vec()))).is_some());
        assert_eq!(
            ops,
            [
                (InputOp::Sse, b"data: 1\n\n".to_vec()),
                (InputOp::Reattach, Vec::new()),
                (InputOp::Json, b"{}".to_vec())
            ]
        );
        assert!(InputOp::replay(&recorded[..recorded.len() - 1], |_, _| {}).is_none());
        assert!(InputOp::replay(&[9, 0, 0, 0, 0], |_, _| {}).is_none());
    }

    #[test]
    fn owners_differ_by_every_field() {
        let none = HeaderMap::new();
        let anyone = CallerDigest::of("", &none);
        let base = Owner::of("a", &anyone, "POST", "/agui", b"{}");
        assert_ne!(base, Owner::of("b", &anyone, "POST", "/agui", b"{}"));
        assert_ne!(
            base,
            Owner::of("a", &CallerDigest::of("k", &none), "POST", "/agui", b"{}")
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
        let alice = CallerDigest::of("", &bearer);
        assert_ne!(anyone, alice);
        assert_ne!(base, Owner::of("a", &alice, "POST", "/agui", b"{}"));
        assert_ne!(
            ThreadRef::new("a", &anyone, "t"),
            ThreadRef::new("a", &alice, "t")
        );
        // With an authenticated caller, the caller is the identity.
        assert_eq!(CallerDigest::of("k", &none), CallerDigest::of("k", &bearer));
        // Without one, any credential the agent may judge tells callers apart.
        let mut keyed = HeaderMap::new();
        keyed.insert("x-api-key", "k1".parse().unwrap());
        assert_ne!(CallerDigest::of("", &keyed), anyone);
        let mut cookie = HeaderMap::new();
        cookie.insert("cookie", "s=1".parse().unwrap());
        assert_ne!(CallerDigest::of("", &cookie), CallerDigest::of("", &keyed));
    }
}
