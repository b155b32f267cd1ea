//! The shared journal over TLS (issue 41): two replicas on a real
//! `redis-server` that speaks only TLS, its certificate from a private CA
//! (`--journal-ca-file`), then one that also wants the client's certificate
//! (`--journal-client-cert`, `--journal-client-key`) and logs in as an ACL
//! user whose password is in a file (`--journal-password-file`). A run cut on one
//! replica continues on the other, and a run whose replica is SIGKILLed is
//! taken over; without the CA, the gateway says why it cannot share.

use std::time::{Duration, Instant};

use crate::replicas::assert_one_run;
use crate::resume::{last_id, post, read_then_cut, run_input};
use crate::support::{Process, agent, free_port, gateway_for, redis_with};
use crate::upstream_tls::Pki;

/// `redis-server` on a TLS port only (its plain port off), its
/// certificate signed by `pki`'s CA; `mutual`: clients must show one too,
/// and log in as the ACL user `agui` (the default user is off).
fn tls_redis(pki: &Pki, mutual: bool) -> Process {
    let file = |name: &str| pki.path(name).display().to_string();
    redis_with(|port| {
        let mut args: Vec<String> = ["--port", "0", "--tls-port", &port.to_string()]
            .map(str::to_owned)
            .to_vec();
        args.extend([
            "--tls-cert-file".to_owned(),
            file("server.pem"),
            "--tls-key-file".to_owned(),
            file("server.key"),
            "--tls-ca-cert-file".to_owned(),
            file("ca.pem"),
            "--tls-auth-clients".to_owned(),
            (if mutual { "yes" } else { "no" }).to_owned(),
        ]);
        if mutual {
            let acl = "--user agui on >s3cret-from-a-file ~* &* +@all --user default off";
            args.extend(acl.split(' ').map(str::to_owned));
        }
        args
    })
}

/// A run cut on `a` and continued on `b`; then one whose replica, `a`,
/// is killed mid-run, taken over by `b`.
pub(crate) async fn cut_and_taken_over(mut a: Process, b: &Process, name: &str) {
    let agui = |gw: &Process| format!("{}/agui", gw.url());
    let first = run_input(&format!("{name}-cut"), "count 20 100");
    let cut = read_then_cut(post(&agui(&a), &first, None).await, 5).await;
    let rest = post(&agui(b), &first, Some(&last_id(&cut))).await;
    assert_eq!(rest.status(), 200, "{name}");
    assert_one_run(&format!("{cut}{}", rest.text().await.unwrap()), 20);

    let second = run_input(&format!("{name}-killed"), "count 40 150");
    let cut = read_then_cut(post(&agui(&a), &second, None).await, 5).await;
    a.child.kill().unwrap();
    a.child.wait().unwrap();
    let rest = post(&agui(b), &second, Some(&last_id(&cut))).await;
    assert_eq!(rest.status(), 200, "{name}");
    assert_one_run(&format!("{cut}{}", rest.text().await.unwrap()), 40);
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh; redis-server (TLS)"]
async fn replicas_share_runs_through_redis_over_tls_and_mutual_tls() {
    let pki = Pki::new("journal");
    let agent = agent("input");
    let ca = pki.path("ca.pem");
    let (cert, key) = (pki.path("client.pem"), pki.path("client.key"));
    for mutual in [false, true] {
        let redis = tls_redis(&pki, mutual);
        // With mutual TLS, the ACL user from the URL, its password from a
        // file (in neither a flag nor the environment).
        let user = if mutual { "agui@" } else { "" };
        let journal = format!("rediss://{user}127.0.0.1:{}/0", redis.port);
        let password = pki.path("redis-password");
        std::fs::write(&password, "s3cret-from-a-file\n").unwrap();
        let mut args = vec![
            "--journal".to_owned(),
            journal.clone(),
            "--journal-ca-file".to_owned(),
            ca.display().to_string(),
        ];
        if mutual {
            args.extend([
                "--journal-client-cert".to_owned(),
                cert.display().to_string(),
                "--journal-client-key".to_owned(),
                key.display().to_string(),
                "--journal-password-file".to_owned(),
                password.display().to_string(),
            ]);
        }
        let replica = |id: &str| {
            let mut all: Vec<&str> = args.iter().map(String::as_str).collect();
            all.extend(["--gateway-id", id]);
            gateway_for(&agent.url(), &all)
        };
        let name = if mutual { "mtls" } else { "tls" };
        cut_and_taken_over(replica("gw-a"), &replica("gw-b"), name).await;
    }
}

/// `/readyz` of a gateway journaled at `journal` (with `more` flags),
/// once it has said something other than ready, within 10 s.
pub(crate) async fn readyz_with(journal: &str, more: &[&str]) -> (u16, serde_json::Value) {
    let mut args = vec!["--journal", journal];
    args.extend_from_slice(more);
    let gw = gateway_for("http://127.0.0.1:9/", &args);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let answer = crate::support::http_get(format!("{}/readyz", gw.url())).await;
        let status = answer.status().as_u16();
        let body: serde_json::Value = answer.json().await.unwrap_or_default();
        if status != 200 || Instant::now() > deadline {
            return (status, body);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// What cannot work as configured makes the gateway unready, saying why
/// (it starts all the same, and keeps trying): a certificate from a CA not
/// given, an ACL user who may not run the journal's commands (a cluster
/// whose slots the journal may not ask: `journal_cluster.rs`). Redis down
/// for a while does not: runs go on unshared.
#[tokio::test]
#[ignore = "tier 2: redis-server (TLS, ACL)"]
async fn a_journal_that_cannot_share_as_configured_makes_the_gateway_unready_and_says_why() {
    let pki = Pki::new("journal-unready");
    let tls = tls_redis(&pki, false);
    let (status, body) = readyz_with(&format!("rediss://127.0.0.1:{}/0", tls.port), &[]).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"]["code"], "JOURNAL_UNAVAILABLE");
    let message = body["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_lowercase();
    assert!(message.contains("certificate"), "{message}");
    // With the CA, ready.
    let ca = pki.path("ca.pem").display().to_string();
    let (status, body) = readyz_with(
        &format!("rediss://127.0.0.1:{}/0", tls.port),
        &["--journal-ca-file", &ca],
    )
    .await;
    assert_eq!(status, 200, "{body}");

    // An ACL user who may do everything but append to a stream.
    let acl = plain_redis(&[
        "--user", "agui", "on", ">pw", "~*", "&*", "+@all", "-xadd", "--user", "default", "off",
    ]);
    let (status, body) =
        readyz_with(&format!("redis://agui:pw@127.0.0.1:{}/0", acl.port), &[]).await;
    assert_eq!(status, 503, "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("ACL refuses XADD"), "{message}");

    // Nothing listening: an outage, not the configuration.
    let (status, body) = readyz_with(&format!("redis://127.0.0.1:{}/0", free_port()), &[]).await;
    assert_eq!(status, 200, "{body}");
}

/// A plain `redis-server` with `args`.
fn plain_redis(args: &[&str]) -> Process {
    redis_with(|port| {
        let mut all = vec!["--port".to_owned(), port.to_string()];
        all.extend(args.iter().map(|a| (*a).to_owned()));
        all
    })
}
