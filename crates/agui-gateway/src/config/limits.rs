//! The `[limits]` table and the journal's keys, read from the file: every
//! count and time where 0 would mean nothing works is refused with its
//! line.

use std::ops::Range;
use std::time::Duration;

use toml::Spanned;

use super::schema::{FileConfig, FileLimits};
use super::{Backend, ConfigError, JournalConfig, Limits};

/// `[limits]`: every count and time at least 1.
pub(super) fn limits_config(
    limits: &FileLimits,
    at: &impl Fn(Range<usize>, String) -> ConfigError,
) -> Result<Limits, ConfigError> {
    let defaults = Limits::default();
    let count = |value: &Option<Spanned<usize>>, key: &str, default: usize| {
        at_least_one(value, &format!("limits.{key}"), at).map(|v| v.unwrap_or(default))
    };
    let secs = |value: &Option<Spanned<u64>>, key: &str, default: Duration| {
        at_least_one(value, &format!("limits.{key}"), at)
            .map(|v| v.map_or(default, Duration::from_secs))
    };
    let limits = Limits {
        max_event_bytes: count(
            &limits.max_event_bytes,
            "max_event_bytes",
            defaults.max_event_bytes,
        )?,
        max_request_bytes: count(
            &limits.max_request_bytes,
            "max_request_bytes",
            defaults.max_request_bytes,
        )?,
        max_streams: count(&limits.max_streams, "max_streams", defaults.max_streams)?,
        max_connections: count(
            &limits.max_connections,
            "max_connections",
            defaults.max_connections,
        )?,
        header_read_timeout: secs(
            &limits.header_read_timeout_secs,
            "header_read_timeout_secs",
            defaults.header_read_timeout,
        )?,
        request_body_timeout: secs(
            &limits.request_body_timeout_secs,
            "request_body_timeout_secs",
            defaults.request_body_timeout,
        )?,
        write_timeout: secs(
            &limits.write_timeout_secs,
            "write_timeout_secs",
            defaults.write_timeout,
        )?,
        card_timeout: secs(
            &limits.card_timeout_secs,
            "card_timeout_secs",
            defaults.card_timeout,
        )?,
        max_card_bytes: count(
            &limits.max_card_bytes,
            "max_card_bytes",
            defaults.max_card_bytes,
        )?,
        // 0 is "off", not a budget nobody could run under.
        token_budget: limits
            .token_budget
            .as_ref()
            .map_or(defaults.token_budget, |v| *v.get_ref()),
        token_budget_window: secs(
            &limits.token_budget_window_secs,
            "token_budget_window_secs",
            defaults.token_budget_window,
        )?,
    };
    Ok(limits)
}

/// A count or a number of seconds where 0 would mean nothing works (no
/// stream, no time to answer), not "off": an error with its line.
pub(super) fn at_least_one<T: Copy + PartialEq + From<u8>>(
    value: &Option<Spanned<T>>,
    key: &str,
    at: &impl Fn(Range<usize>, String) -> ConfigError,
) -> Result<Option<T>, ConfigError> {
    match value {
        Some(v) if *v.get_ref() == T::from(0) => {
            Err(at(v.span(), format!("{key}: must be at least 1")))
        }
        Some(v) => Ok(Some(*v.get_ref())),
        None => Ok(None),
    }
}

/// `journal`, `detach_grace_secs` and the `[limits]` `journal_*` keys.
pub(super) fn journal_config(
    file: &FileConfig,
    at: &impl Fn(Range<usize>, String) -> ConfigError,
) -> Result<JournalConfig, ConfigError> {
    let mut journal = JournalConfig::default();
    if let Some(backend) = &file.journal {
        journal.backend = Backend::parse(backend.get_ref())
            .map_err(|why| at(backend.span(), format!("journal: {why}")))?;
    }
    if let Some(secs) = file.detach_grace_secs {
        journal.detach_grace = Duration::from_secs(secs);
    }
    if let Some(tls) = &file.journal_tls {
        let path = |text: &Option<String>| text.as_deref().map(std::path::PathBuf::from);
        let files = tls.get_ref();
        journal.access.ca_file = path(&files.ca_file);
        journal.access.client_cert = path(&files.client_cert);
        journal.access.client_key = path(&files.client_key);
    }
    if let Some(file) = &file.journal_password_file {
        journal.access.password_file = Some(file.get_ref().into());
    }
    let plain = !matches!(&journal.backend, Backend::Redis(nodes) if nodes.is_tls());
    if plain && let Some(tls) = &file.journal_tls {
        return Err(at(
            tls.span(),
            "journal_tls: the journal is not a rediss:// URL (TLS)".to_owned(),
        ));
    }
    // Read now, so that check-config and the start refuse what every
    // connection would: the key at fault, at its line.
    if let Err(why) = super::journal_access::read(&journal.access, std::time::SystemTime::now()) {
        let span = match why {
            super::journal_access::AccessError::Password(_) => {
                file.journal_password_file.as_ref().map(Spanned::span)
            }
            _ => file.journal_tls.as_ref().map(Spanned::span),
        };
        let key = match &why {
            super::journal_access::AccessError::Password(_) => "",
            _ => "journal_tls.",
        };
        return Err(at(span.unwrap_or(0..0), format!("{key}{why}")));
    }
    let limits = &file.limits;
    let count = |value: &Option<Spanned<usize>>, key: &str| {
        at_least_one(value, &format!("limits.{key}"), at)
    };
    let secs = |value: &Option<Spanned<u64>>, key: &str| {
        at_least_one(value, &format!("limits.{key}"), at).map(|v| v.map(Duration::from_secs))
    };
    let bounds = &mut journal.limits;
    if let Some(runs) = count(&limits.journal_max_runs, "journal_max_runs")? {
        bounds.max_runs = runs;
    }
    if let Some(bytes) = count(&limits.journal_max_run_bytes, "journal_max_run_bytes")? {
        bounds.max_run_bytes = bytes;
    }
    if let Some(bytes) = count(&limits.journal_max_bytes, "journal_max_bytes")? {
        bounds.max_bytes = bytes;
    }
    if let Some(ttl) = secs(&limits.journal_ttl_secs, "journal_ttl_secs")? {
        bounds.ttl = ttl;
    }
    if let Some(ttl) = secs(&limits.journal_thread_ttl_secs, "journal_thread_ttl_secs")? {
        bounds.thread_ttl = ttl;
    }
    Ok(journal)
}
