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
    Redis(RedisNodes),
}

/// The Redis a shared journal is kept in: one node's URL (of a single
/// Redis, or of any node of a Redis Cluster), or a cluster's seed nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisNodes {
    /// Never empty; all of one scheme, user, password, database.
    urls: Vec<url::Url>,
}

/// Seeds named at most (a cluster needs one that answers).
const MAX_SEEDS: usize = 32;

impl RedisNodes {
    /// `redis[s]://[user:password@]host[:port][/db]`, and for a cluster's
    /// seeds several hosts: `redis[s]://[user:password@]a:7000,b:7001[/db]`
    /// (each with the one user, password, database and options, as the
    /// cluster's client wants them). A comma in the password stays the
    /// password's.
    pub fn parse(text: &str) -> Result<RedisNodes, String> {
        // Never quoted back: the URL may hold a password.
        let malformed =
            || "not a redis[s]://[user:password@]host[:port][,host[:port]…][/db] URL".to_owned();
        let (scheme, rest) = text
            .split_once("://")
            .filter(|(scheme, _)| matches!(*scheme, "redis" | "rediss"))
            .ok_or_else(malformed)?;
        // The authority ends at the path, query or fragment; the user and
        // password end at its last `@`.
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(end);
        let (userinfo, hosts) = match authority.rfind('@') {
            Some(at) => authority.split_at(at + 1),
            None => ("", authority),
        };
        let mut urls = Vec::new();
        for host in hosts.split(',') {
            if urls.len() == MAX_SEEDS {
                return Err(format!("more than {MAX_SEEDS} Redis seed nodes"));
            }
            let url = url::Url::parse(&format!("{scheme}://{userinfo}{}{tail}", host.trim()))
                .ok()
                .filter(|url| url.host_str().is_some_and(|h| !h.is_empty()))
                .ok_or_else(malformed)?;
            urls.push(url);
        }
        Ok(RedisNodes { urls })
    }

    /// The first node named: what is shown (redacted) and what a TLS
    /// check looks at.
    pub fn first(&self) -> &url::Url {
        &self.urls[0]
    }

    /// Every node named, the first first.
    pub fn urls(&self) -> &[url::Url] {
        &self.urls
    }

    pub fn is_tls(&self) -> bool {
        self.first().scheme() == "rediss"
    }
}

impl Backend {
    /// `memory`, `off` or a `redis://` (`rediss://`: TLS) URL, with a
    /// cluster's further seeds after commas (`RedisNodes`).
    pub fn parse(text: &str) -> Result<Backend, String> {
        match text {
            "memory" => Ok(Backend::Memory),
            "off" => Ok(Backend::Off),
            url if url.starts_with("redis://") || url.starts_with("rediss://") => {
                RedisNodes::parse(url).map(Backend::Redis)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn nodes(text: &str) -> Vec<String> {
        match Backend::parse(text) {
            Ok(Backend::Redis(nodes)) => nodes.urls().iter().map(url::Url::to_string).collect(),
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn a_cluster_s_seeds_are_the_url_s_hosts_after_commas() {
        assert_eq!(nodes("redis://r:6379/0"), ["redis://r:6379/0"]);
        assert_eq!(
            nodes("rediss://u:p@a:7000, b:7001,c/0?protocol=resp3"),
            [
                "rediss://u:p@a:7000/0?protocol=resp3",
                "rediss://u:p@b:7001/0?protocol=resp3",
                "rediss://u:p@c/0?protocol=resp3"
            ]
        );
        // A comma in the password is the password's.
        assert_eq!(nodes("redis://u:p,w@a:1"), ["redis://u:p,w@a:1"]);
        assert_eq!(nodes("redis://:p,w@a:1,b:2").len(), 2);
        for bad in [
            "redis://",
            "redis://a,",
            "redis://a,,b",
            "redis://a,b:port",
            "redis:///0",
            "http://a",
        ] {
            let err = Backend::parse(bad).unwrap_err();
            assert!(!err.contains(bad), "{err}");
        }
        let many = format!("redis://a{}", ",b".repeat(MAX_SEEDS));
        assert!(Backend::parse(&many).unwrap_err().contains("seed"));
        assert!(RedisNodes::parse("rediss://a,b").unwrap().is_tls());
    }
}
