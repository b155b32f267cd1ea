//! The shared journal's access files (`[journal_tls] ca_file`,
//! `client_cert`, `client_key`; `journal_password_file`): read and checked
//! with the configuration, so that `check-config` and the start name the
//! key at fault, and read again when they change on disk (a renewed
//! certificate, a rotated password), when the journal reconnects with them
//! (`watch`). A file that no longer reads keeps the connection that works.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use agui_edge::tls::{FileStamp, TlsFileError, read_bounded};
use agui_journal::RedisAccessFiles;
use agui_journal::redis::{RedisAccess, RedisJournal};
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

/// Reconnects `journal` whenever its access files change, for as long as
/// the runtime runs. One warning per change that does not take.
pub fn watch(journal: Arc<RedisJournal>, url: Url, files: RedisAccessFiles) {
    if files.files().next().is_none() {
        return;
    }
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    runtime.spawn(async move {
        let mut seen = FileStamp::of(files.files());
        loop {
            tokio::time::sleep(CHECK_EVERY).await;
            let now = FileStamp::of(files.files());
            if now == seen {
                continue;
            }
            seen = now;
            let reconnected = match read(&files, SystemTime::now()) {
                Ok(access) => journal
                    .reconnect(&url, &access)
                    .await
                    .map_err(|err| err.to_string()),
                Err(err) => Err(err.to_string()),
            };
            match reconnected {
                Ok(()) => tracing::info!("the shared journal reconnected with its changed access files"),
                Err(why) => tracing::warn!(
                    "the shared journal's access files changed but do not work, the connection that works stays: {why}"
                ),
            }
        }
    });
}
