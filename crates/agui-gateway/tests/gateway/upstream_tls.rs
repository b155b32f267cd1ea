//! TLS towards agents (issue 28): an a2a-sdk 1.3.0 agent served over HTTPS
//! with a private CA, and one that also requires a client certificate
//! (uvicorn `CERT_REQUIRED`), certificates made here with rcgen. With its
//! CA bundle and client certificate the gateway reaches them; without, a
//! run ends in `RUN_ERROR` on the upstream side; an expired client
//! certificate is refused by `check-config`, naming the key and its line.
//! The same over gRPC (`grpcs://`, issue 29).

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use serde_json::{Value, json};

use crate::support::{
    Process, agent_a_failing, agent_with, agui_events, assert_valid_run, check_config, client,
    gateway, http_get, text_of,
};

/// A private CA, a server certificate for 127.0.0.1 and localhost, a
/// client certificate, and an expired one, as PEM files in a fresh folder.
pub struct Pki {
    dir: PathBuf,
}

impl Pki {
    pub fn new(name: &str) -> Pki {
        let dir =
            std::env::temp_dir().join(format!("agui-gateway-tls-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // Each certificate has its own subject: OpenSSL (the agent's side)
        // takes a certificate whose subject is its issuer's for self-signed.
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.distinguished_name
            .push(DnType::CommonName, "agui-gateway test CA");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_key = KeyPair::generate().unwrap();
        let ca_cert = ca.self_signed(&ca_key).unwrap();
        std::fs::write(dir.join("ca.pem"), ca_cert.pem()).unwrap();
        let issuer = Issuer::new(ca, ca_key);
        let leaf = |file: &str, purpose: ExtendedKeyUsagePurpose, expired: bool| {
            let mut params =
                CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
                    .unwrap();
            params.distinguished_name.push(DnType::CommonName, file);
            params.extended_key_usages.push(purpose);
            if expired {
                params.not_before = rcgen::date_time_ymd(2000, 1, 1);
                params.not_after = rcgen::date_time_ymd(2001, 1, 1);
            }
            let key = KeyPair::generate().unwrap();
            let cert = params.signed_by(&key, &issuer).unwrap();
            std::fs::write(dir.join(format!("{file}.pem")), cert.pem()).unwrap();
            std::fs::write(dir.join(format!("{file}.key")), key.serialize_pem()).unwrap();
        };
        leaf("server", ExtendedKeyUsagePurpose::ServerAuth, false);
        leaf("client", ExtendedKeyUsagePurpose::ClientAuth, false);
        leaf("expired", ExtendedKeyUsagePurpose::ClientAuth, true);
        Pki { dir }
    }

    pub fn path(&self, file: &str) -> PathBuf {
        self.dir.join(file)
    }

    /// An a2a-sdk 1.3.0 agent over HTTPS; with `mutual`, it requires a
    /// client certificate signed by the CA.
    fn agent(&self, mutual: bool) -> Process {
        self.agent_of("python-v1", mutual)
    }

    /// The same agent over gRPC only (`grpcs://`).
    fn grpc_agent(&self, mutual: bool) -> Process {
        self.agent_of("python-v1-grpc", mutual)
    }

    fn agent_of(&self, name: &str, mutual: bool) -> Process {
        let (cert, key, ca) = (
            self.path("server.pem"),
            self.path("server.key"),
            self.path("ca.pem"),
        );
        let mut env: Vec<(&str, &Path)> = vec![("TLS_CERT", &cert), ("TLS_KEY", &key)];
        if mutual {
            env.push(("TLS_CLIENT_CA", &ca));
        }
        agent_with(name, &env)
    }

    /// A configuration file for one agent at `upstream` with `tls` (TOML
    /// lines of its `[agents.a.tls]` table, none for no table) and `global`
    /// (lines of `[upstream_tls]`).
    fn config(
        &self,
        name: &str,
        upstream: &str,
        tls: &[(&str, &str)],
        global: &[(&str, &str)],
    ) -> PathBuf {
        let table = |lines: &[(&str, &str)]| -> String {
            lines
                .iter()
                .map(|(key, file)| format!("{key} = {:?}\n", self.path(file).display().to_string()))
                .collect()
        };
        let mut text = String::new();
        if !global.is_empty() {
            text.push_str(&format!("[upstream_tls]\n{}", table(global)));
        }
        text.push_str(&format!("[agents.a]\nupstream = \"{upstream}\"\n"));
        if !tls.is_empty() {
            text.push_str(&format!("[agents.a.tls]\n{}", table(tls)));
        }
        let path = self.path(name);
        std::fs::write(&path, text).unwrap();
        path
    }
}

impl Pki {
    /// A gateway with the CA and the client certificate for the agent at
    /// `upstream`, after a run through it streamed the agent's answer.
    async fn reached_with_a_client_certificate(&self, upstream: &str) -> Process {
        let with = self.config(
            "with.toml",
            upstream,
            &[
                ("ca_file", "ca.pem"),
                ("client_cert", "client.pem"),
                ("client_key", "client.key"),
            ],
            &[],
        );
        let gw = gateway(&["--config", with.to_str().unwrap()]);
        let events = run(&gw, "tls-mutual").await;
        assert_eq!(
            assert_valid_run(&events)["type"],
            "RUN_FINISHED",
            "{events:?}"
        );
        assert_eq!(
            text_of(&events),
            "Thinking...Hello from the streaming test agent.Done."
        );
        gw
    }
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

async fn run(gw: &Process, thread: &str) -> Vec<Value> {
    let input = json!({ "threadId": thread, "runId": format!("{thread}-run"),
        "messages": [{ "id": format!("{thread}-u"), "role": "user", "content": "chunks" }] });
    let body = client()
        .post(format!("{}/agui", gw.url()))
        .json(&input)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    agui_events(&body)
}

fn https(agent: &Process) -> String {
    format!("https://127.0.0.1:{}/", agent.port)
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
async fn an_agent_wanting_a_client_certificate_is_reached_with_it_and_refused_without() {
    let pki = Pki::new("mutual");
    let agent = pki.agent(true);
    drop(pki.reached_with_a_client_certificate(&https(&agent)).await);

    // The CA alone: the agent resets the connection after the handshake.
    let without = pki.config(
        "without.toml",
        &https(&agent),
        &[("ca_file", "ca.pem")],
        &[],
    );
    let gw = gateway(&["--config", without.to_str().unwrap()]);
    let events = run(&gw, "tls-no-cert").await;
    let last = assert_valid_run(&events);
    assert_eq!(last["type"], "RUN_ERROR", "{events:?}");
    assert!(
        last["code"]
            .as_str()
            .unwrap_or_default()
            .starts_with("UPSTREAM_"),
        "{last}"
    );
    // It says which side failed, not where the agent lives or what file.
    let message = last["message"].as_str().unwrap_or_default();
    assert!(
        !message.contains(&pki.dir.display().to_string()),
        "{message}"
    );
}

/// A gRPC agent over TLS wanting a client certificate (issue 29): with the
/// agent's CA and client certificate a run and the card go through; with
/// the CA alone the handshake is refused and the run says so on the
/// upstream side; with neither, the agent's certificate is not trusted.
#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
async fn a_grpcs_agent_wanting_a_client_certificate_is_reached_with_it_and_refused_without() {
    let pki = Pki::new("grpcs");
    let agent = pki.grpc_agent(true);
    let upstream = format!("grpcs://localhost:{}", agent.port);
    let gw = pki.reached_with_a_client_certificate(&upstream).await;
    let card: Value = http_get(format!("{}/.well-known/agent-card.json", gw.url()))
        .await
        .json()
        .await
        .unwrap();
    assert!(
        card["name"]
            .as_str()
            .unwrap_or_default()
            .contains("gRPC only"),
        "{card}"
    );
    drop(gw);

    for (name, tls) in [
        ("ca-only.toml", &[("ca_file", "ca.pem")][..]),
        ("nothing.toml", &[][..]),
    ] {
        let config = pki.config(name, &upstream, tls, &[]);
        let gw = gateway(&["--config", config.to_str().unwrap()]);
        let events = run(&gw, "grpcs-refused").await;
        let last = assert_valid_run(&events);
        assert_eq!(last["type"], "RUN_ERROR", "{name}: {events:?}");
        assert_eq!(last["code"], "UPSTREAM_UNREACHABLE", "{name}: {last}");
        if tls.is_empty() {
            let message = last["message"].as_str().unwrap_or_default();
            assert!(message.contains("not trusted"), "{name}: {last}");
        }
    }
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
async fn a_private_ca_is_trusted_from_the_global_bundle_and_only_then() {
    let pki = Pki::new("private-ca");
    let agent = pki.agent(false);
    let trusted = pki.config(
        "trusted.toml",
        &https(&agent),
        &[],
        &[("ca_file", "ca.pem")],
    );
    let gw = gateway(&["--config", trusted.to_str().unwrap()]);
    let events = run(&gw, "tls-ca").await;
    assert_eq!(
        assert_valid_run(&events)["type"],
        "RUN_FINISHED",
        "{events:?}"
    );
    drop(gw);
    let untrusted = pki.config("untrusted.toml", &https(&agent), &[], &[]);
    let gw = gateway(&["--config", untrusted.to_str().unwrap()]);
    let events = run(&gw, "tls-unknown-ca").await;
    let last = assert_valid_run(&events);
    assert_eq!(last["type"], "RUN_ERROR", "{events:?}");
    assert_eq!(
        last["message"], "the upstream agent's TLS certificate is not trusted",
        "{last}"
    );
    // /readyz says so per agent.
    let health = agent_a_failing(&gw).await;
    assert_eq!(
        health["error"], "the upstream's TLS certificate is not trusted",
        "{health}"
    );
}

#[test]
fn check_config_refuses_an_expired_client_certificate_and_half_an_identity() {
    let pki = Pki::new("check");
    let check = |file: &Path| check_config(file);
    let expired = pki.config(
        "expired.toml",
        "https://127.0.0.1:9/",
        &[
            ("client_cert", "expired.pem"),
            ("client_key", "expired.key"),
        ],
        &[],
    );
    let (ok, stderr) = check(&expired);
    assert!(!ok);
    assert!(
        stderr.contains("expired.toml:3: agents.a.tls.client_cert:"),
        "{stderr}"
    );
    assert!(stderr.contains("a certificate expired on"), "{stderr}");
    let half = pki.config(
        "half.toml",
        "https://127.0.0.1:9/",
        &[("client_cert", "client.pem")],
        &[],
    );
    let (ok, stderr) = check(&half);
    assert!(!ok);
    assert!(stderr.contains("client_key is missing"), "{stderr}");
    let not_pem = pki.config(
        "not-pem.toml",
        "https://127.0.0.1:9/",
        &[("ca_file", "half.toml")],
        &[],
    );
    let (ok, stderr) = check(&not_pem);
    assert!(!ok);
    assert!(
        stderr.contains("agents.a.tls.ca_file:") && stderr.contains("no certificate in PEM"),
        "{stderr}"
    );
    let good = pki.config(
        "good.toml",
        "https://127.0.0.1:9/",
        &[
            ("ca_file", "ca.pem"),
            ("client_cert", "client.pem"),
            ("client_key", "client.key"),
        ],
        &[],
    );
    let (ok, stderr) = check(&good);
    assert!(ok, "{stderr}");
}
