//! Configuration: one agent from flags, or several from a TOML file.
//!
//! ```toml
//! listen = "0.0.0.0:8080"
//! public_url = "https://agents.example.com"   # optional; else from the request
//! default_agent = "assistant"                 # serves the un-prefixed routes
//! keepalive_secs = 15
//! shutdown_grace_secs = 10
//!
//! [limits]
//! max_event_bytes = 16777216
//! max_request_bytes = 4194304
//! max_streams = 10000
//!
//! [cors]
//! allow_origins = ["*"]
//!
//! [agents.assistant]
//! upstream = "http://127.0.0.1:9999/"
//! a2a_version = "auto"          # "0.3" or "1.0" to skip card detection
//! format = "agui"               # or "hector" (`output` is the older name)
//! headers = { "X-API-KEY" = "secret" }
//! connect_timeout_secs = 5
//! idle_timeout_secs = 300
//! card_refresh_secs = 300
//! cancel_on_disconnect = false
//! interrupts = false
//! ```

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use a2a_agui::OutputFormat;
use serde::Deserialize;
use toml::Spanned;
use url::Url;

/// Each stream holds two sockets; the open-file limit is usually the bound.
pub const DEFAULT_MAX_STREAMS: usize = 10_000;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}:{line}: {message}")]
    At {
        path: String,
        line: usize,
        message: String,
    },
    #[error("{path}: {message}")]
    File { path: String, message: String },
}

/// Which A2A dialect to speak to an upstream when the gateway builds the
/// request itself (the seed's body, the AG-UI endpoint).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum A2aVersion {
    /// From the agent card.
    Auto,
    V03,
    V10,
}

#[derive(Debug, Clone)]
pub struct AgentConfig {
    pub name: String,
    pub upstream: Url,
    pub a2a_version: A2aVersion,
    /// What converted streams are written in unless the request asks.
    pub format: OutputFormat,
    pub headers: Vec<(String, String)>,
    pub connect_timeout: Duration,
    pub idle_timeout: Duration,
    pub card_refresh: Duration,
    pub cancel_on_disconnect: bool,
    pub interrupts: bool,
}

impl AgentConfig {
    pub fn new(name: impl Into<String>, upstream: Url) -> AgentConfig {
        AgentConfig {
            name: name.into(),
            upstream,
            a2a_version: A2aVersion::Auto,
            format: OutputFormat::Agui,
            headers: Vec::new(),
            connect_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(300),
            card_refresh: Duration::from_secs(300),
            cancel_on_disconnect: false,
            interrupts: false,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Config {
    pub listen: SocketAddr,
    pub public_url: Option<Url>,
    pub default_agent: Option<String>,
    pub agents: Vec<AgentConfig>,
    pub keepalive: Duration,
    pub shutdown_grace: Duration,
    pub max_event_bytes: usize,
    pub max_request_bytes: usize,
    /// Converted streams open at once; past it, new ones get a 503.
    pub max_streams: usize,
    pub cors_origins: Vec<String>,
}

impl Config {
    pub fn single(listen: SocketAddr, agent: AgentConfig) -> Config {
        Config {
            listen,
            public_url: None,
            default_agent: Some(agent.name.clone()),
            agents: vec![agent],
            keepalive: Duration::from_secs(15),
            shutdown_grace: Duration::from_secs(10),
            max_event_bytes: a2a_agui::DEFAULT_MAX_EVENT_BYTES,
            max_request_bytes: 4 << 20,
            max_streams: DEFAULT_MAX_STREAMS,
            cors_origins: Vec::new(),
        }
    }

    pub fn load(path: &str) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::File {
            path: path.to_owned(),
            message: format!("cannot read: {e}"),
        })?;
        Config::parse(path, &text)
    }

    /// Parses and checks a TOML configuration; every error names its line.
    pub fn parse(path: &str, text: &str) -> Result<Config, ConfigError> {
        let at = |span: std::ops::Range<usize>, message: String| ConfigError::At {
            path: path.to_owned(),
            line: line_of(text, span.start),
            message,
        };
        let file: FileConfig = toml::from_str(text).map_err(|e| {
            let line = e.span().map_or(1, |s| line_of(text, s.start));
            ConfigError::At {
                path: path.to_owned(),
                line,
                message: e.message().to_owned(),
            }
        })?;
        let listen = match &file.listen {
            Some(listen) => listen
                .get_ref()
                .parse()
                .map_err(|e| at(listen.span(), format!("listen: {e}")))?,
            None => SocketAddr::from(([127, 0, 0, 1], 8080)),
        };
        let public_url = match &file.public_url {
            Some(url) => Some(
                Url::parse(url.get_ref())
                    .map_err(|e| at(url.span(), format!("public_url: {e}")))?,
            ),
            None => None,
        };
        let mut agents = Vec::new();
        for (name, agent) in &file.agents {
            let upstream = Url::parse(agent.upstream.get_ref()).map_err(|e| {
                at(
                    agent.upstream.span(),
                    format!("agents.{name}.upstream: {e}"),
                )
            })?;
            if !matches!(upstream.scheme(), "http" | "https") {
                return Err(at(
                    agent.upstream.span(),
                    format!("agents.{name}.upstream: only http and https upstreams are supported"),
                ));
            }
            let mut config = AgentConfig::new(name.clone(), upstream);
            if let Some(version) = &agent.a2a_version {
                config.a2a_version = match version.get_ref().as_str() {
                    "auto" => A2aVersion::Auto,
                    "0.3" | "0.2" => A2aVersion::V03,
                    "1.0" => A2aVersion::V10,
                    other => {
                        return Err(at(
                            version.span(),
                            format!("agents.{name}.a2a_version: {other:?} is not auto, 0.3 or 1.0"),
                        ));
                    }
                };
            }
            let format = match (&agent.format, &agent.output) {
                (Some(format), Some(output)) => {
                    let later = format.span().start.max(output.span().start);
                    return Err(at(
                        later..later,
                        format!("agents.{name}: format and output (its older name) are both given"),
                    ));
                }
                (Some(format), None) => Some(("format", format)),
                (None, Some(output)) => Some(("output", output)),
                (None, None) => None,
            };
            if let Some((key, format)) = format {
                config.format = OutputFormat::parse(format.get_ref()).ok_or_else(|| {
                    at(
                        format.span(),
                        format!("agents.{name}.{key}: expected agui or hector"),
                    )
                })?;
            }
            config.headers = agent.headers.clone().into_iter().collect();
            if let Some(secs) = agent.connect_timeout_secs {
                config.connect_timeout = Duration::from_secs(secs);
            }
            if let Some(secs) = agent.idle_timeout_secs {
                config.idle_timeout = Duration::from_secs(secs);
            }
            if let Some(secs) = agent.card_refresh_secs {
                config.card_refresh = Duration::from_secs(secs);
            }
            config.cancel_on_disconnect = agent.cancel_on_disconnect.unwrap_or(false);
            config.interrupts = agent.interrupts.unwrap_or(false);
            agents.push(config);
        }
        if agents.is_empty() {
            return Err(ConfigError::File {
                path: path.to_owned(),
                message: "no agents: add an [agents.NAME] table with an upstream".to_owned(),
            });
        }
        let default_agent = match &file.default_agent {
            Some(name) if !agents.iter().any(|a| &a.name == name.get_ref()) => {
                return Err(at(
                    name.span(),
                    format!("default_agent: no agent named {:?}", name.get_ref()),
                ));
            }
            Some(name) => Some(name.get_ref().clone()),
            None if agents.len() == 1 => Some(agents[0].name.clone()),
            None => agents
                .iter()
                .find(|a| a.name == "default")
                .map(|a| a.name.clone()),
        };
        Ok(Config {
            listen,
            public_url,
            default_agent,
            agents,
            keepalive: Duration::from_secs(file.keepalive_secs.unwrap_or(15).max(1)),
            shutdown_grace: Duration::from_secs(file.shutdown_grace_secs.unwrap_or(10)),
            max_event_bytes: file
                .limits
                .max_event_bytes
                .unwrap_or(a2a_agui::DEFAULT_MAX_EVENT_BYTES),
            max_request_bytes: file.limits.max_request_bytes.unwrap_or(4 << 20),
            max_streams: file
                .limits
                .max_streams
                .unwrap_or(DEFAULT_MAX_STREAMS)
                .max(1),
            cors_origins: file.cors.allow_origins,
        })
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    listen: Option<Spanned<String>>,
    public_url: Option<Spanned<String>>,
    default_agent: Option<Spanned<String>>,
    keepalive_secs: Option<u64>,
    shutdown_grace_secs: Option<u64>,
    #[serde(default)]
    limits: Limits,
    #[serde(default)]
    cors: Cors,
    #[serde(default)]
    agents: BTreeMap<String, FileAgent>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Limits {
    max_event_bytes: Option<usize>,
    max_request_bytes: Option<usize>,
    max_streams: Option<usize>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Cors {
    #[serde(default)]
    allow_origins: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileAgent {
    upstream: Spanned<String>,
    a2a_version: Option<Spanned<String>>,
    format: Option<Spanned<String>>,
    /// The older name of `format`.
    output: Option<Spanned<String>>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    connect_timeout_secs: Option<u64>,
    idle_timeout_secs: Option<u64>,
    card_refresh_secs: Option<u64>,
    cancel_on_disconnect: Option<bool>,
    interrupts: Option<bool>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_file_parses() {
        let config = Config::parse(
            "gw.toml",
            "listen = \"127.0.0.1:9000\"\n[agents.a]\nupstream = \"http://127.0.0.1:1/\"\noutput = \"hector\"\nheaders = { \"X-API-KEY\" = \"k\" }\n",
        )
        .unwrap();
        assert_eq!(config.listen.port(), 9000);
        assert_eq!(config.default_agent.as_deref(), Some("a"));
        assert_eq!(config.agents[0].format, OutputFormat::Hector);
        assert_eq!(
            config.agents[0].headers,
            vec![("X-API-KEY".to_owned(), "k".to_owned())]
        );
    }

    #[test]
    fn errors_name_their_line() {
        let err = Config::parse(
            "gw.toml",
            "[agents.a]\nupstream = \"http://x/\"\n\noutput = \"xml\"\n",
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "gw.toml:4: agents.a.output: expected agui or hector"
        );
        let err = Config::parse(
            "gw.toml",
            "listen = \"x\"\n[agents.a]\nupstream = \"http://x/\"\n",
        )
        .unwrap_err();
        assert!(err.to_string().starts_with("gw.toml:1: listen:"), "{err}");
        let err = Config::parse(
            "gw.toml",
            "[agents.a]\nupstream = \"http://x/\"\nbogus = 1\n",
        )
        .unwrap_err();
        assert!(err.to_string().starts_with("gw.toml:3:"), "{err}");
        let err = Config::parse("gw.toml", "[agents.a]\nupstream = \"ftp://x/\"\n").unwrap_err();
        assert!(err.to_string().starts_with("gw.toml:2:"), "{err}");
    }

    #[test]
    fn format_has_output_as_an_older_name() {
        let agent = |lines: &str| format!("[agents.a]\nupstream = \"http://x/\"\n{lines}");
        let parse = |lines: &str| Config::parse("gw.toml", &agent(lines));
        for key in ["format", "output"] {
            let config = parse(&format!("{key} = \"hector\"\n")).unwrap();
            assert_eq!(config.agents[0].format, OutputFormat::Hector, "{key}");
        }
        assert_eq!(parse("").unwrap().agents[0].format, OutputFormat::Agui);
        let err = parse("format = \"xml\"\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "gw.toml:3: agents.a.format: expected agui or hector"
        );
        let err = parse("format = \"agui\"\noutput = \"hector\"\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "gw.toml:4: agents.a: format and output (its older name) are both given"
        );
    }
}
