//! Who runs and threads belong to, as digests: stable across processes
//! (a shared journal compares them between replicas), revealing nothing of
//! the caller, and with no field able to run into the next.

use sha2::{Digest, Sha256};

/// A 256-bit digest of length-prefixed fields.
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

/// Who calls, as far as runs go: the authenticated caller, or with
/// authentication off every credential the client sent, which the agent
/// may judge. A run is continued, and a thread's runs are found, only by
/// the same caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CallerDigest {
    digest: [u8; 32],
    /// No identity at all (authentication off, no credential header):
    /// every such caller is the same one.
    anonymous: bool,
}

impl CallerDigest {
    /// `scope` is the authenticated caller, empty with authentication
    /// off; then `credentials` are: each field of the request that may
    /// carry who the client is, by name, with every value the request gave
    /// it (none when it has none). The names count too, so the gateway
    /// passes the same list for every request.
    pub fn of<'a, Values>(
        scope: &'a str,
        credentials: impl IntoIterator<Item = (&'a str, Values)>,
    ) -> CallerDigest
    where
        Values: IntoIterator<Item = &'a [u8]>,
    {
        let mut fields: Vec<&[u8]> = vec![scope.as_bytes()];
        let mut anonymous = scope.is_empty();
        if scope.is_empty() {
            for (name, values) in credentials {
                fields.push(name.as_bytes());
                for value in values {
                    anonymous = false;
                    fields.push(value);
                }
            }
        }
        CallerDigest {
            digest: digest(&fields),
            anonymous,
        }
    }

    /// A caller known by `scope` alone, whose request has no credential
    /// field to add (with an empty scope: anonymous, though not the digest
    /// of a request whose credential fields were looked at and empty).
    pub fn of_scope(scope: &str) -> CallerDigest {
        CallerDigest::of(scope, std::iter::empty::<(&str, [&[u8]; 0])>())
    }

    /// Whether the caller has no identity: whatever it could list, every
    /// other anonymous caller could list too.
    pub fn is_anonymous(&self) -> bool {
        self.anonymous
    }

    /// Whose token budget a run counts against (`budget`): a digest of
    /// the digest, 128 bits in hex, the same on every replica.
    pub fn budget_tag(&self) -> String {
        hex(&digest(&[b"budget", &self.digest]))[..32].to_owned()
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

    /// Which of the journal's shards holds the thread (`redis::keys`):
    /// its digest's first four bits, 0 to 15.
    pub fn shard_digit(&self) -> u8 {
        self.0[0] >> 4
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

/// Which thread list a thread is shown in: one agent's threads, for one
/// caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ThreadListKey {
    digest: [u8; 32],
    /// Every anonymous caller's: shared by all of them, listed to none.
    anonymous: bool,
}

impl ThreadListKey {
    pub fn new(agent: &str, caller: &CallerDigest) -> ThreadListKey {
        ThreadListKey {
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
    pub list: ThreadListKey,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A request's credential fields as the gateway passes them: every
    /// name, with the values `sent` gives it.
    fn caller(scope: &str, sent: &[(&'static str, &'static str)]) -> CallerDigest {
        const FIELDS: [&str; 3] = ["authorization", "cookie", "x-api-key"];
        let values = |name: &'static str| {
            let given = sent.iter().filter(move |(field, _)| *field == name);
            given.map(|(_, value)| value.as_bytes())
        };
        CallerDigest::of(scope, FIELDS.map(|name| (name, values(name))))
    }

    #[test]
    fn owner_digests_round_trip() {
        let owner = Owner::of("a", &caller("", &[]), "POST", "/", b"");
        assert_eq!(Owner::from_hex(&owner.to_hex()), Some(owner));
        assert_eq!(Owner::from_hex("zz"), None);
    }

    #[test]
    fn owners_differ_by_every_field() {
        let anyone = caller("", &[]);
        let base = Owner::of("a", &anyone, "POST", "/agui", b"{}");
        assert_ne!(base, Owner::of("b", &anyone, "POST", "/agui", b"{}"));
        assert_ne!(
            base,
            Owner::of("a", &caller("k", &[]), "POST", "/agui", b"{}")
        );
        assert_ne!(base, Owner::of("a", &anyone, "PUT", "/agui", b"{}"));
        assert_ne!(base, Owner::of("a", &anyone, "POST", "/x", b"{}"));
        assert_ne!(base, Owner::of("a", &anyone, "POST", "/agui", b"{ }"));
        // Fields cannot run into each other.
        assert_ne!(
            Owner::of("a", &anyone, "POST", "/aguiX", b"{}"),
            Owner::of("a", &anyone, "POST", "/agui", b"X{}")
        );
        let bearer = [("authorization", "Bearer x")];
        let alice = caller("", &bearer);
        assert_ne!(anyone, alice);
        assert_ne!(base, Owner::of("a", &alice, "POST", "/agui", b"{}"));
        assert_ne!(
            ThreadRef::new("a", &anyone, "t"),
            ThreadRef::new("a", &alice, "t")
        );
        // With an authenticated caller, the caller is the identity.
        assert_eq!(caller("k", &[]), caller("k", &bearer));
        assert_eq!(caller("k", &[]), CallerDigest::of_scope("k"));
        // Without one, any credential tells callers apart, and which one
        // it came in.
        let keyed = caller("", &[("x-api-key", "k1")]);
        assert_ne!(keyed, anyone);
        assert_ne!(caller("", &[("cookie", "s=1")]), keyed);
        assert_ne!(caller("", &[("cookie", "k1")]), keyed);
        assert!(anyone.is_anonymous() && !keyed.is_anonymous());
    }
}
