//! The shared journal's access files (`[journal_tls] ca_file`,
//! `client_cert`, `client_key`; `journal_password_file`): read and checked
//! with the configuration, so that `check-config` and the start name the
//! key at fault, and read again when they change on disk (a renewed
//! certificate, a rotated password), when the journal reconnects with them.
//! `keep` also checks, all along, that the journal can share runs
//! (`JournalHealth`, what `/readyz` says).

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use agui_edge::tls::{FileStamp, TlsFileError, read_bounded};
use agui_journal::redis::{RedisAccess, RedisJournal, Unusable};
use agui_journal::{RedisAccessFiles, RedisNodes};
use url::Url;

use super::{AgentTlsError, UpstreamTls};

/// How often the files are looked at.
pub const CHECK_EVERY: Duration = Duration::from_secs(10);
/// A password longer than this is no password (Redis's own are far
/// shorter; the file is the operator's, its size is bounded all the same).
const MAX_PASSWORD_BYTES: usize = 4096;

/// What is wrong with the journal's access files.
#[derive(Debug, thiserror::Error)]
pub enum AccessError {
    #[error(transparent)]
    Tls(#[from] AgentTlsError),
    #[error("journal_password_file: {0}")]
    Password(String),
}

/// The journal's URL as it may be shown: its password starred.
pub fn redacted(url: &Url) -> String {
    let mut url = url.clone();
    if url.password().is_some() {
        let _ = url.set_password(Some("***"));
    }
    url.to_string()
}

/// The files' content, checked at `now`.
pub fn read(files: &RedisAccessFiles, now: SystemTime) -> Result<RedisAccess, AccessError> {
    let tls = UpstreamTls {
        ca_file: files.ca_file.clone(),
        client_cert: files.client_cert.clone(),
        client_key: files.client_key.clone(),
    }
    .read(now)?;
    let password = match &files.password_file {
        Some(path) => Some(password(path)?),
        None => None,
    };
    Ok(RedisAccess {
        roots: tls.roots,
        // One PEM holds the chain then the key: each side takes its part.
        identity: tls.identity.map(|pem| (pem.clone(), pem)),
        password,
    })
}

fn password(path: &std::path::Path) -> Result<String, AccessError> {
    let failed =
        |err: TlsFileError| AccessError::Password(format!("{}: {}", err.path, err.message));
    let bytes = read_bounded("journal_password_file", path).map_err(failed)?;
    let text = String::from_utf8(bytes)
        .map_err(|_| AccessError::Password(format!("{}: not UTF-8", path.display())))?;
    // Secrets mounted from Kubernetes or written by `echo` end in a newline.
    let password = text.trim_end_matches(['\r', '\n']).to_owned();
    if password.is_empty() || password.len() > MAX_PASSWORD_BYTES || password.contains('\n') {
        return Err(AccessError::Password(format!(
            "{}: not one line of at most {MAX_PASSWORD_BYTES} bytes",
            path.display()
        )));
    }
    Ok(password)
}

/// Whether the shared journal can share runs, as last checked: what
/// `/readyz` reports. Shared by the keeper and the probe.
#[derive(Clone, Default)]
pub struct JournalHealth(Arc<std::sync::Mutex<Option<Unusable>>>);

impl JournalHealth {
    /// Why it cannot, when it cannot.
    pub fn unusable(&self) -> Option<Unusable> {
        self.0.lock().ok().and_then(|now| now.clone())
    }

    /// Records a check; logs when the answer changed (once, not per check).
    fn set(&self, checked: Result<(), Unusable>) {
        let Ok(mut now) = self.0.lock() else { return };
        let next = checked.err();
        if *now == next {
            return;
        }
        match (&next, now.is_some()) {
            (Some(why), _) if why.misconfigured => tracing::error!(
                "the shared journal cannot be used as configured, runs are not shared (/readyz says so): {}: {}",
                why.reason,
                why.detail
            ),
            (Some(why), _) => tracing::warn!(
                "the shared journal cannot be used now, runs go on unshared: {}",
                why.detail
            ),
            (None, true) => tracing::info!("the shared journal works again: runs are shared"),
            (None, false) => {}
        }
        *now = next;
    }
}

/// How often the journal is checked while it works, and while it does not.
const CHECK_WHILE_WORKING: Duration = Duration::from_secs(10);
const CHECK_WHILE_FAILING: Duration = Duration::from_secs(2);

/// Reaches the journal now (when it can), and checks it; then, for as long
/// as the runtime runs, checks it again, reaches it again when it never was
/// or its access files changed (a renewed certificate, a rotated
/// password). A file that no longer reads keeps the connection that works.
pub async fn keep(
    journal: Arc<RedisJournal>,
    nodes: RedisNodes,
    files: RedisAccessFiles,
    access: RedisAccess,
) -> JournalHealth {
    let health = JournalHealth::default();
    health.set(reach(&journal, &nodes, &access).await);
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return health;
    };
    let kept = health.clone();
    runtime.spawn(async move {
        let mut seen = FileStamp::of(files.files());
        let mut access = access;
        // Files read but not connected with yet: tried until they work,
        // and reported all along (the link that works stays meanwhile).
        let mut pending = false;
        loop {
            let failing = kept.unusable().is_some();
            let wait = if failing {
                CHECK_WHILE_FAILING
            } else {
                CHECK_WHILE_WORKING
            };
            tokio::time::sleep(wait).await;
            let stamp = FileStamp::of(files.files());
            if stamp != seen {
                seen = stamp;
                match read(&files, SystemTime::now()) {
                    Ok(read) => {
                        access = read;
                        pending = true;
                    }
                    Err(err) => tracing::warn!(
                        "the shared journal's access files changed but do not read, the ones that worked stay: {err}"
                    ),
                }
            }
            // A link that failed is made anew: a failover may have moved
            // the name, or a password may have changed while Redis was down.
            let checked = if pending || failing || !journal.is_connected() {
                reach(&journal, &nodes, &access).await
            } else {
                journal.check().await
            };
            pending &= checked.is_err();
            kept.set(checked);
        }
    });
    health
}

/// Connects anew with `access`, then checks the link.
async fn reach(
    journal: &RedisJournal,
    nodes: &RedisNodes,
    access: &RedisAccess,
) -> Result<(), Unusable> {
    journal
        .reconnect(nodes, access)
        .await
        .map_err(|err| Unusable::of(&err))?;
    journal.check().await
}
