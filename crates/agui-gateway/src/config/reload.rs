//! What a reload changes: the configuration read again against the one
//! serving, setting by setting. A setting only a restart can change (a
//! listener, the journal, what the process was started with) keeps its
//! running value in the new configuration and is named, so the rest of
//! the reload applies and the state stays what the process really does.

use std::fmt::Debug;

use super::{AgentConfig, Config};

/// What changed between the configuration serving and the one read.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// Settings that need a restart (their file key), left as they run.
    pub restart: Vec<&'static str>,
    /// Settings applied to new requests (their file key).
    pub applied: Vec<&'static str>,
    pub agents_added: Vec<String>,
    pub agents_removed: Vec<String>,
    pub agents_changed: Vec<String>,
}

impl Changes {
    pub fn is_empty(&self) -> bool {
        *self == Changes::default()
    }

    /// Whether every agent must be built again, changed or not: what
    /// `Agent::new` takes from the top level changed.
    pub fn rebuilds_agents(&self) -> bool {
        self.applied.iter().any(|key| AGENT_INPUTS.contains(key))
    }
}

/// The top-level settings an agent is built with (its card fetch bounds,
/// the keys its card's signatures are checked with).
const AGENT_INPUTS: [&str; 4] = [
    "limits.card_timeout_secs",
    "limits.max_card_bytes",
    "limits.max_event_bytes",
    "card_signing",
];

/// Compares `new` with `old`; what needs a restart is put back in `new`
/// as it runs.
pub fn settle(old: &Config, new: &mut Config) -> Changes {
    let mut changes = Changes::default();
    // A random id is drawn at every read: only one given counts as a change.
    let drawn = |id: &str| id.strip_prefix("agui-gateway-").is_some_and(is_drawn);
    if drawn(&old.gateway_id) && drawn(&new.gateway_id) {
        new.gateway_id = old.gateway_id.clone();
    }
    // Named, and put back as it runs.
    macro_rules! restart {
        ($key:literal, $($field:ident).+) => {
            if old.$($field).+ != new.$($field).+ {
                changes.restart.push($key);
                new.$($field).+ = old.$($field).+.clone();
            }
        };
    }
    restart!("listen", listen);
    restart!("admin_listen", admin_listen);
    // The certificate files themselves are re-read when they change.
    restart!("tls", tls);
    restart!("journal", journal.backend);
    // Where its access files are (their content is re-read as it changes).
    restart!("journal_tls.ca_file", journal.access.ca_file);
    restart!("journal_tls.client_cert", journal.access.client_cert);
    restart!("journal_tls.client_key", journal.access.client_key);
    restart!("journal_password_file", journal.access.password_file);
    if !same(&old.journal.limits, &new.journal.limits) {
        changes.restart.push("limits.journal_*");
        new.journal.limits = old.journal.limits;
    }
    restart!("gateway_id", gateway_id);
    restart!("otlp_endpoint", otlp_endpoint);
    restart!("shutdown_grace_secs", shutdown_grace);
    restart!("drain_delay_secs", drain_delay);
    // The listener's bounds, and the stream cap its count is kept against.
    restart!("limits.max_streams", limits.max_streams);
    restart!("limits.max_connections", limits.max_connections);
    restart!("limits.max_request_bytes", limits.max_request_bytes);
    restart!(
        "limits.header_read_timeout_secs",
        limits.header_read_timeout
    );
    restart!("limits.write_timeout_secs", limits.write_timeout);
    let was = &old.limits;
    let limits = &new.limits;
    let applied = [
        ("public_url", old.public_url != new.public_url),
        ("default_agent", old.default_agent != new.default_agent),
        (
            "trusted_proxies",
            !same(&old.trusted_proxies, &new.trusted_proxies),
        ),
        ("keepalive_secs", old.keepalive != new.keepalive),
        (
            "detach_grace_secs",
            old.journal.detach_grace != new.journal.detach_grace,
        ),
        (
            "limits.max_event_bytes",
            was.max_event_bytes != limits.max_event_bytes,
        ),
        (
            "limits.request_body_timeout_secs",
            was.request_body_timeout != limits.request_body_timeout,
        ),
        (
            "limits.card_timeout_secs",
            was.card_timeout != limits.card_timeout,
        ),
        (
            "limits.max_card_bytes",
            was.max_card_bytes != limits.max_card_bytes,
        ),
        (
            "limits.token_budget",
            was.token_budget != limits.token_budget
                || was.token_budget_window != limits.token_budget_window,
        ),
        ("cors", !same(&old.cors, &new.cors)),
        ("auth", !same(&old.auth, &new.auth)),
        ("rate_limit", old.rate_limit != new.rate_limit),
        ("inspector", old.inspector != new.inspector),
        (
            "copilotkit_path",
            old.copilotkit_path != new.copilotkit_path,
        ),
        ("card_signing", old.card_signing != new.card_signing),
    ];
    changes.applied = applied
        .into_iter()
        .filter_map(|(key, differs)| differs.then_some(key))
        .collect();
    let named = |config: &Config, name: &str| -> Option<AgentConfig> {
        config.agents.iter().find(|a| a.name == name).cloned()
    };
    for agent in &new.agents {
        match named(old, &agent.name) {
            None => changes.agents_added.push(agent.name.clone()),
            Some(was) if was != *agent => changes.agents_changed.push(agent.name.clone()),
            Some(_) => {}
        }
    }
    for agent in &old.agents {
        if named(new, &agent.name).is_none() {
            changes.agents_removed.push(agent.name.clone());
        }
    }
    changes
}

/// The eight hex digits of `random_gateway_id`.
fn is_drawn(tail: &str) -> bool {
    tail.len() == 8 && tail.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Equal as written out, for settings without `PartialEq` (none of them
/// holds a secret `Debug` hides).
fn same<T: Debug>(a: &T, b: &T) -> bool {
    format!("{a:?}") == format!("{b:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Config {
        Config::parse("gateway.toml", text).expect("valid")
    }

    const BASE: &str = "listen = \"127.0.0.1:8080\"\ndefault_agent = \"a\"\n[agents.a]\nupstream = \"http://127.0.0.1:1/\"\n";

    #[test]
    fn nothing_changed_is_empty_even_with_a_random_gateway_id() {
        let old = parsed(BASE);
        let mut new = parsed(BASE);
        assert_ne!(old.gateway_id, new.gateway_id, "drawn at each read");
        let changes = settle(&old, &mut new);
        assert!(changes.is_empty(), "{changes:?}");
        assert_eq!(new.gateway_id, old.gateway_id);
    }

    #[test]
    fn agents_added_removed_and_changed_are_named() {
        let old = parsed(&format!(
            "{BASE}[agents.b]\nupstream = \"http://127.0.0.1:2/\"\n"
        ));
        let mut new = parsed(
            "listen = \"127.0.0.1:8080\"\ndefault_agent = \"a\"\n[agents.a]\nupstream = \"http://127.0.0.1:1/\"\nidle_timeout_secs = 9\n\
             [agents.c]\nupstream = \"http://127.0.0.1:3/\"\n",
        );
        let changes = settle(&old, &mut new);
        assert_eq!(changes.agents_added, ["c"]);
        assert_eq!(changes.agents_removed, ["b"]);
        assert_eq!(changes.agents_changed, ["a"]);
        assert!(changes.restart.is_empty() && changes.applied.is_empty());
        assert!(!changes.rebuilds_agents());
    }

    #[test]
    fn an_agent_secret_change_is_a_change() {
        let agent = |secret: &str| {
            format!(
                "{BASE}[agents.a.auth]\ntype = \"oauth2_client_credentials\"\ntoken_url = \"http://127.0.0.1:5/t\"\nclient_id = \"gw\"\nclient_secret = \"{secret}\"\n"
            )
        };
        let old = parsed(&agent("one"));
        let mut new = parsed(&agent("two"));
        assert_eq!(settle(&old, &mut new).agents_changed, ["a"]);
    }

    #[test]
    fn what_needs_a_restart_is_named_and_kept_as_it_runs() {
        let old = parsed(BASE);
        let mut new = parsed(
            "listen = \"0.0.0.0:9\"\nadmin_listen = \"127.0.0.1:9091\"\njournal = \"off\"\ngateway_id = \"gw-2\"\n\
             [limits]\nmax_streams = 3\nmax_connections = 4\ntoken_budget = 100\n\
             [rate_limit]\nper_second = 5\n\
             [cors]\nallow_origins = [\"https://app.example.com\"]\n\
             [agents.a]\nupstream = \"http://127.0.0.1:1/\"\n",
        );
        let changes = settle(&old, &mut new);
        assert_eq!(
            changes.restart,
            [
                "listen",
                "admin_listen",
                "journal",
                "gateway_id",
                "limits.max_streams",
                "limits.max_connections"
            ]
        );
        assert_eq!(
            changes.applied,
            ["limits.token_budget", "cors", "rate_limit"]
        );
        assert_eq!(new.listen, old.listen);
        assert_eq!(new.admin_listen, None);
        assert_eq!(new.journal.backend, old.journal.backend);
        assert_eq!(new.gateway_id, old.gateway_id);
        assert_eq!(new.limits.max_streams, old.limits.max_streams);
        assert_eq!(new.limits.max_connections, old.limits.max_connections);
        // What applies is the new file's.
        assert_eq!(new.limits.token_budget, 100);
        assert!(new.rate_limit.is_some());
        // Settled, the same file again changes nothing.
        let mut again = new.clone();
        assert!(settle(&new, &mut again).is_empty());
    }

    #[test]
    fn card_limits_rebuild_every_agent() {
        let old = parsed(BASE);
        let mut new = parsed(
            "listen = \"127.0.0.1:8080\"\n[limits]\ncard_timeout_secs = 3\n[agents.a]\nupstream = \"http://127.0.0.1:1/\"\n",
        );
        let changes = settle(&old, &mut new);
        assert_eq!(changes.applied, ["limits.card_timeout_secs"]);
        assert!(changes.rebuilds_agents());
    }
}
