//! The TOML file: read leniently where the gateway has a default, checked
//! strictly where a mistake would open the edge (unknown keys, header
//! names, origins, allow entries are all errors with their line).

use std::net::SocketAddr;
use std::ops::Range;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use a2a_agui::OutputFormat;
use axum::http::{HeaderName, HeaderValue};
use serde::Deserialize;
use toml::Spanned;
use toml::de::DeTable;
use url::Url;

use agui_edge::auth::{Allow, AuthConfig, JwtConfig, JwtKey};
use agui_edge::cors::{CorsConfig, OriginRule};
use agui_edge::ratelimit::RateLimit;
use agui_edge::tls::{ServeTls, TLS_FILE_KEYS};

use super::env::Environment;
use super::forward_policy::{ForwardPolicy, TrustedProxies};
use super::limits::{at_least_one, journal_config, limits_config};
use super::reach::{BindingPin, ModePin, UnknownValue};
use super::schema::{Cors, FileAgent, FileAuth, FileConfig, FileServeTls};
use super::{A2aVersion, AgentConfig, Config, ConfigError, Reach, random_gateway_id};

/// `text` (the file's, possibly empty) with what `env` sets and
/// references (`env.rs`), checked.
pub fn parse(path: &str, text: &str, env: &Environment) -> Result<Config, ConfigError> {
    // A span past the text is a value a variable set.
    let at = |span: Range<usize>, message: String| match env.variable_at(text.len(), span.start) {
        Some(variable) => ConfigError::Env {
            variable: variable.to_owned(),
            message,
        },
        None => ConfigError::At {
            path: path.to_owned(),
            line: line_of(text, span.start),
            message,
        },
    };
    let toml_error = |e: toml::de::Error| match e.span() {
        Some(span) => at(span, e.message().to_owned()),
        None => ConfigError::At {
            path: path.to_owned(),
            line: 1,
            message: e.message().to_owned(),
        },
    };
    let mut root = DeTable::parse(text).map_err(toml_error)?;
    env.apply(root.get_mut(), text.len())
        .map_err(|(span, message)| at(span, message))?;
    let file = FileConfig::deserialize(toml::de::Deserializer::from(root)).map_err(toml_error)?;
    let address =
        |value: &Option<Spanned<String>>, key: &str| -> Result<Option<SocketAddr>, ConfigError> {
            match value {
                Some(v) => v
                    .get_ref()
                    .parse()
                    .map(Some)
                    .map_err(|e| at(v.span(), format!("{key}: {e}"))),
                None => Ok(None),
            }
        };
    let top = Config::default();
    let listen = address(&file.listen, "listen")?.unwrap_or(top.listen);
    let admin_listen = address(&file.admin_listen, "admin_listen")?;
    let tls = serve_tls(file.tls.as_ref(), &at)?;
    let public_url = match &file.public_url {
        Some(url) => {
            let parsed = Url::parse(url.get_ref())
                .map_err(|e| at(url.span(), format!("public_url: {e}")))?;
            if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
                return Err(at(
                    url.span(),
                    "public_url: the gateway's public URL is http(s)://host[:port][/path]"
                        .to_owned(),
                ));
            }
            Some(parsed)
        }
        None => None,
    };
    let copilotkit_path = match &file.copilotkit_path {
        None => top.copilotkit_path.clone(),
        Some(path) => super::copilotkit_path(path.get_ref())
            .map_err(|why| at(path.span(), format!("copilotkit_path: {why}")))?,
    };
    let otlp_endpoint = match &file.otlp_endpoint {
        Some(url) => Some(
            Url::parse(url.get_ref())
                .ok()
                .filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
                // Not quoted back: a collector's URL may hold credentials.
                .ok_or_else(|| {
                    at(
                        url.span(),
                        "otlp_endpoint: not an http(s) URL of an OTLP collector".to_owned(),
                    )
                })?,
        ),
        None => None,
    };
    let mut agents = Vec::new();
    for (name, agent) in &file.agents {
        if !super::is_agent_name(name) {
            return Err(at(
                agent.upstream.span(),
                format!("agents.{name:?}: a name is letters, digits, '.', '_' and '-'"),
            ));
        }
        let mut config = agent_config(name, agent, &at)?;
        config.tls = super::upstream_tls::from_file(
            name,
            agent.tls.as_ref(),
            file.upstream_tls.as_ref(),
            &at,
        )?;
        if let Some(auth) = &agent.auth {
            config.auth = Some(super::upstream_auth::from_file(name, auth, &at)?);
        }
        if let Some(policy) = &agent.card_signatures {
            config.card_signatures =
                crate::signing::Policy::parse(policy.get_ref()).ok_or_else(|| {
                    at(
                        policy.span(),
                        format!(
                            "agents.{name}.card_signatures: {:?} is not off, verify or require",
                            policy.get_ref()
                        ),
                    )
                })?;
            if config.card_signatures != crate::signing::Policy::Off
                && matches!(config.upstream.scheme(), "grpc" | "grpcs")
            {
                // The gateway reads a gRPC agent's card without its
                // signatures (its prost types carry the fields it uses).
                return Err(at(
                    policy.span(),
                    format!(
                        "agents.{name}.card_signatures: a gRPC agent's card signatures are not checked; use \"off\""
                    ),
                ));
            }
            if config.card_signatures != crate::signing::Policy::Off
                && file
                    .card_signing
                    .as_ref()
                    .is_none_or(|t| t.get_ref().trusted_keys.is_none())
            {
                return Err(at(
                    policy.span(),
                    format!(
                        "agents.{name}.card_signatures: checking signatures needs [card_signing] trusted_keys"
                    ),
                ));
            }
        }
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
        None => match agents.iter().find(|a| a.name == "default") {
            Some(agent) => Some(agent.name.clone()),
            None => {
                // `/agui`, the card and the un-prefixed routes need one.
                let second = file.agents.values().nth(1).map(|a| a.upstream.span());
                return Err(at(
                    second.unwrap_or(0..0),
                    format!(
                        "{} agents and no default_agent: name the one /agui and the un-prefixed routes serve",
                        agents.len()
                    ),
                ));
            }
        },
    };
    let trusted_proxies = match &file.trusted_proxies {
        None => TrustedProxies::loopback(),
        Some(list) => {
            let mut nets = Vec::new();
            for net in list.get_ref() {
                let parsed = net
                    .parse()
                    .or_else(|_| net.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
                    .map_err(|_| {
                        at(
                            list.span(),
                            format!("trusted_proxies: {net:?} is not an address or CIDR"),
                        )
                    })?;
                nets.push(parsed);
            }
            TrustedProxies(nets)
        }
    };
    let gateway_id = match &file.gateway_id {
        Some(id) if id.get_ref().is_empty() || id.get_ref().contains([' ', ',', '\t']) => {
            return Err(at(
                id.span(),
                "gateway_id: one token, no spaces or commas".to_owned(),
            ));
        }
        Some(id) => id.get_ref().clone(),
        None => random_gateway_id(),
    };
    let limits = limits_config(&file.limits, &at)?;
    let journal = journal_config(&file, &at)?;
    let cors = cors_config(&file.cors, &at)?;
    let auth = auth_config(&file.auth, &at)?;
    let card_signing = super::card_signing::from_file(file.card_signing.as_ref(), &at)?;
    if let Some(table) = &file.card_signing
        && card_signing.signing_key.is_some()
        && public_url.is_none()
    {
        // A card's addresses come from the request without it: the
        // gateway would sign a card naming any host a client sent.
        return Err(at(
            table.span(),
            "card_signing.signing_key needs public_url: a signed card must name the gateway's own address, not one a request chose"
                .to_owned(),
        ));
    }
    if auth.jwt.is_none()
        && let Some((name, agent)) = file.agents.iter().find(|(_, agent)| {
            agent
                .auth
                .as_ref()
                .is_some_and(|a| a.get_ref().kind == "token_exchange")
        })
        && let Some(table) = &agent.auth
    {
        // The subject token is the caller's JWT as [auth.jwt] verified it:
        // without it there is nothing to exchange.
        return Err(at(
            table.span(),
            format!(
                "agents.{name}.auth: token_exchange needs [auth.jwt] (the caller's verified token is what is exchanged)"
            ),
        ));
    }
    let rate_limit = match &file.rate_limit {
        None => None,
        Some(limit) if limit.get_ref().per_second == 0 => {
            return Err(at(
                limit.span(),
                "rate_limit.per_second: must be at least 1".to_owned(),
            ));
        }
        Some(limit) => Some(RateLimit {
            per_second: limit.get_ref().per_second,
            burst: limit
                .get_ref()
                .burst
                .unwrap_or(limit.get_ref().per_second)
                .max(1),
        }),
    };
    Ok(Config {
        listen,
        admin_listen,
        tls,
        public_url,
        default_agent,
        agents,
        gateway_id,
        trusted_proxies,
        keepalive: at_least_one(&file.keepalive_secs, "keepalive_secs", &at)?
            .map_or(top.keepalive, Duration::from_secs),
        shutdown_grace: file
            .shutdown_grace_secs
            .map_or(top.shutdown_grace, Duration::from_secs),
        drain_delay: file
            .drain_delay_secs
            .map_or(top.drain_delay, Duration::from_secs),
        limits,
        journal,
        cors,
        auth,
        rate_limit,
        inspector: file.inspector.unwrap_or(false),
        copilotkit_path,
        otlp_endpoint,
        card_signing,
    })
}

/// `[tls]`: both files or neither, read and checked now.
fn serve_tls(
    table: Option<&Spanned<FileServeTls>>,
    at: &impl Fn(Range<usize>, String) -> ConfigError,
) -> Result<Option<ServeTls>, ConfigError> {
    let Some(table) = table else {
        return Ok(None);
    };
    let tls = ServeTls {
        cert: PathBuf::from(&table.get_ref().cert),
        key: PathBuf::from(&table.get_ref().key),
        names: TLS_FILE_KEYS,
    };
    tls.load(SystemTime::now())
        .map_err(|err| at(table.span(), err.to_string()))?;
    Ok(Some(tls))
}

/// `[cors]`: each origin checked where it stands.
fn cors_config(
    file: &Cors,
    at: &impl Fn(Range<usize>, String) -> ConfigError,
) -> Result<CorsConfig, ConfigError> {
    let mut cors = CorsConfig::default();
    for origin in &file.allow_origins {
        let rule = OriginRule::parse(origin.get_ref()).map_err(|why| {
            at(
                origin.span(),
                format!("cors.allow_origins: {:?}: {why}", origin.get_ref()),
            )
        })?;
        cors.origins.push(rule);
    }
    if let Some(credentials) = &file.allow_credentials {
        cors.allow_credentials = *credentials.get_ref();
        cors.check()
            .map_err(|why| at(credentials.span(), format!("cors.allow_credentials: {why}")))?;
    }
    if let Some(secs) = file.max_age_secs {
        cors.max_age = Duration::from_secs(secs);
    }
    if let Some(names) = &file.expose_headers {
        cors.expose_headers = names
            .iter()
            .map(|name| {
                HeaderName::from_bytes(name.get_ref().as_bytes()).map_err(|_| {
                    at(
                        name.span(),
                        format!(
                            "cors.expose_headers: {:?} is no header name",
                            name.get_ref()
                        ),
                    )
                })
            })
            .collect::<Result<_, _>>()?;
    }
    Ok(cors)
}

fn agent_config(
    name: &str,
    agent: &FileAgent,
    at: &impl Fn(Range<usize>, String) -> ConfigError,
) -> Result<AgentConfig, ConfigError> {
    let upstream = Url::parse(agent.upstream.get_ref()).map_err(|e| {
        at(
            agent.upstream.span(),
            format!("agents.{name}.upstream: {e}"),
        )
    })?;
    if !matches!(upstream.scheme(), "http" | "https" | "grpc" | "grpcs")
        || upstream.host_str().is_none()
    {
        return Err(at(
            agent.upstream.span(),
            format!("agents.{name}.upstream: an http, https, grpc or grpcs URL with a host"),
        ));
    }
    let mut config = AgentConfig::new(name, upstream);
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
    let mut reach = Reach::default();
    let wrong = |v: &Spanned<String>, key: &str, e: UnknownValue| {
        at(v.span(), format!("agents.{name}.{key}: {e}"))
    };
    if let Some(v) = &agent.binding {
        let pin: BindingPin = v.get_ref().parse().map_err(|e| wrong(v, "binding", e))?;
        reach.binding = pin.0;
    }
    if let Some(v) = &agent.mode {
        let pin: ModePin = v.get_ref().parse().map_err(|e| wrong(v, "mode", e))?;
        reach.mode = pin.0;
    }
    config.reach = reach;
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
    for (header, value) in agent.headers.iter().flatten() {
        if HeaderName::from_bytes(header.get_ref().as_bytes()).is_err() {
            return Err(at(
                header.span(),
                format!(
                    "agents.{name}.headers: {:?} is not a header name",
                    header.get_ref()
                ),
            ));
        }
        // The value is not quoted back: it may be a secret.
        if HeaderValue::from_str(value.get_ref()).is_err() {
            return Err(at(
                value.span(),
                format!(
                    "agents.{name}.headers.{}: the value is not a valid header value (control characters or line breaks)",
                    header.get_ref()
                ),
            ));
        }
        config
            .headers
            .push((header.get_ref().clone(), value.get_ref().clone()));
    }
    for (header, variable) in agent.headers_env.iter().flatten() {
        if HeaderName::from_bytes(header.get_ref().as_bytes()).is_err() {
            return Err(at(
                header.span(),
                format!(
                    "agents.{name}.headers_env: {:?} is not a header name",
                    header.get_ref()
                ),
            ));
        }
        let valid = !variable.get_ref().is_empty()
            && variable
                .get_ref()
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !valid {
            return Err(at(
                variable.span(),
                format!(
                    "agents.{name}.headers_env.{}: {:?} is not an environment variable's name",
                    header.get_ref(),
                    variable.get_ref()
                ),
            ));
        }
        config
            .headers_env
            .push((header.get_ref().clone(), variable.get_ref().clone()));
    }
    if let Some(list) = &agent.forward_client_headers {
        config.forward = ForwardPolicy::parse(list.get_ref()).map_err(|e| {
            at(
                list.span(),
                format!("agents.{name}.forward_client_headers: {e}"),
            )
        })?;
    }
    if let Some(list) = &agent.allowed_origins {
        for origin in list.get_ref() {
            let url = Url::parse(origin).ok().filter(|u| {
                matches!(u.scheme(), "http" | "https") && u.path() == "/" && u.query().is_none()
            });
            let Some(url) = url else {
                return Err(at(
                    list.span(),
                    format!(
                        "agents.{name}.allowed_origins: {origin:?} is not an origin (scheme://host[:port])"
                    ),
                ));
            };
            config.allowed_origins.push(url.origin());
        }
    }
    if let Some(list) = &agent.allow {
        config.allow = list
            .get_ref()
            .iter()
            .map(|entry| {
                Allow::parse(entry).ok_or_else(|| {
                    at(
                        list.span(),
                        format!(
                            "agents.{name}.allow: {entry:?} is not \"*\", \"key:NAME\" or \"sub:SUBJECT\""
                        ),
                    )
                })
            })
            .collect::<Result<_, _>>()?;
    }
    let key = |field: &str| format!("agents.{name}.{field}");
    if let Some(secs) = at_least_one(
        &agent.connect_timeout_secs,
        &key("connect_timeout_secs"),
        at,
    )? {
        config.connect_timeout = Duration::from_secs(secs);
    }
    if let Some(secs) = at_least_one(&agent.idle_timeout_secs, &key("idle_timeout_secs"), at)? {
        config.idle_timeout = Duration::from_secs(secs);
    }
    if let Some(secs) = at_least_one(&agent.card_refresh_secs, &key("card_refresh_secs"), at)? {
        config.card_refresh = Duration::from_secs(secs);
    }
    config.cancel_on_disconnect = agent.cancel_on_disconnect.unwrap_or(false);
    config.interrupts = agent.interrupts.unwrap_or(false);
    Ok(config)
}

fn auth_config(
    auth: &FileAuth,
    at: &impl Fn(Range<usize>, String) -> ConfigError,
) -> Result<AuthConfig, ConfigError> {
    let jwt = match &auth.jwt {
        None => None,
        Some(jwt) => {
            let span = jwt.span();
            let jwt = jwt.get_ref();
            let key = match (&jwt.jwks_url, &jwt.public_key_file, &jwt.secret_env) {
                (Some(url), None, None) => {
                    let url = Url::parse(url)
                        .ok()
                        .filter(|u| matches!(u.scheme(), "http" | "https"))
                        .ok_or_else(|| {
                            at(
                                span.clone(),
                                "auth.jwt.jwks_url: not an http(s) URL".to_owned(),
                            )
                        })?;
                    JwtKey::Jwks(url)
                }
                (None, Some(file), None) => JwtKey::PublicKeyFile(file.into()),
                (None, None, Some(env)) => JwtKey::SecretEnv(env.clone()),
                _ => {
                    return Err(at(
                        span,
                        "auth.jwt: give exactly one of jwks_url, public_key_file, secret_env"
                            .to_owned(),
                    ));
                }
            };
            let defaults = JwtConfig::for_key(key);
            Some(JwtConfig {
                issuer: jwt.issuer.clone(),
                audience: jwt.audience.clone(),
                leeway: jwt.leeway_secs.map_or(defaults.leeway, Duration::from_secs),
                algorithms: jwt.algorithms.clone().unwrap_or(defaults.algorithms),
                key: defaults.key,
            })
        }
    };
    Ok(AuthConfig {
        api_keys_file: auth.api_keys_file.clone().map(Into::into),
        api_keys_env: auth.api_keys_env.clone(),
        jwt,
    })
}

fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}
