//! Where runs are journaled, and the journal's bounds: what the journal is
//! configured with (the gateway's configuration fills these from its file,
//! flags and environment).

use std::time::Duration;

/// Where runs are journaled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    /// No journal: ids are written, but no run can be continued.
    Off,
    /// In this process (the default).
    Memory,
    /// In this process and in Redis: any replica serves a reconnect, and
    /// takes over a run whose replica died.
    Redis(url::Url),
}

impl Backend {
    /// `memory`, `off` or a `redis://` (`rediss://`: TLS) URL.
    pub fn parse(text: &str) -> Result<Backend, String> {
        match text {
            "memory" => Ok(Backend::Memory),
            "off" => Ok(Backend::Off),
            url if url.starts_with("redis://") || url.starts_with("rediss://") => {
                url::Url::parse(url)
                    .ok()
                    .filter(|u| u.host_str().is_some_and(|h| !h.is_empty()))
                    .map(Backend::Redis)
                    // Never quoted back: the URL may hold a password.
                    .ok_or_else(|| {
                        "not a redis[s]://[user:password@]host[:port][/db] URL".to_owned()
                    })
            }
            _ => Err("not \"memory\", \"off\" or a redis:// (rediss:// for TLS) URL".to_owned()),
        }
    }

    pub fn is_on(&self) -> bool {
        *self != Backend::Off
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
    /// How Redis is reached beyond its URL: TLS files and a password file.
    pub access: RedisAccessFiles,
}

/// The files a `rediss://` journal is reached with (`[journal_tls]`), and
/// the password kept out of the URL and the environment. Read by the
/// gateway when it starts and again when they change.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RedisAccessFiles {
    /// A CA bundle trusted on top of the system's roots.
    pub ca_file: Option<std::path::PathBuf>,
    /// The client certificate (mutual TLS) and its key.
    pub client_cert: Option<std::path::PathBuf>,
    pub client_key: Option<std::path::PathBuf>,
    /// The ACL user's password (the user from the URL, else `default`).
    pub password_file: Option<std::path::PathBuf>,
}

impl RedisAccessFiles {
    /// The files, in the order they are read.
    pub fn files(&self) -> impl Iterator<Item = &std::path::Path> {
        [
            &self.ca_file,
            &self.client_cert,
            &self.client_key,
            &self.password_file,
        ]
        .into_iter()
        .flatten()
        .map(std::path::PathBuf::as_path)
    }
}

impl Default for JournalConfig {
    fn default() -> JournalConfig {
        JournalConfig {
            backend: Backend::Memory,
            detach_grace: Duration::from_secs(60),
            limits: JournalLimits::default(),
            access: RedisAccessFiles::default(),
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct JournalLimits {
    /// Runs kept, live or finished; past it the oldest finished run goes.
    pub max_runs: usize,
    /// Frame bytes kept per run; past it its oldest frames go (a resume
    /// from before them is refused: `ResumeError::TooOld`).
    pub max_run_bytes: usize,
    /// Frame bytes kept in all; past it finished runs go, oldest first,
    /// then the growing run's oldest frames.
    pub max_bytes: usize,
    /// How long a finished run can still be resumed or connected to.
    pub ttl: Duration,
    /// How long a thread is remembered after its last run (its id, for
    /// its caller's list; the tasks its runs named, for a replay from the
    /// agent), in memory and in Redis alike; never less than `ttl`.
    pub thread_ttl: Duration,
}

impl JournalLimits {
    /// How long a thread's record lives after its last run: `thread_ttl`,
    /// and at least as long as that run can be connected to.
    pub fn thread_lifetime(&self) -> Duration {
        self.thread_ttl.max(self.ttl)
    }
}

impl Default for JournalLimits {
    fn default() -> JournalLimits {
        JournalLimits {
            max_runs: 10_000,
            max_run_bytes: 1 << 20,
            max_bytes: 64 << 20,
            ttl: Duration::from_secs(300),
            thread_ttl: Duration::from_secs(7 * 24 * 3600),
        }
    }
}
