use super::*;
use crate::config::ClientAuth;
use base64::Engine as _;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;

/// A token endpoint: client `gw` / `s3cret` (Basic), tokens `tok-N`
/// living `life` seconds; an exchange answers `ex-<subject>-N`.
async fn endpoint(life: u64) -> (Url, Arc<AtomicU64>) {
    let count = Arc::new(AtomicU64::new(0));
    let answer = move |State(count): State<Arc<AtomicU64>>, headers: HeaderMap, body: String| async move {
        let n = count.fetch_add(1, Ordering::SeqCst) + 1;
        let basic = base64::engine::general_purpose::STANDARD.encode("gw:s3cret");
        if headers.get("authorization").and_then(|v| v.to_str().ok())
            != Some(&format!("Basic {basic}"))
        {
            return (StatusCode::UNAUTHORIZED, r#"{"error":"invalid_client"}"#).into_response();
        }
        let form: HashMap<String, String> = url::form_urlencoded::parse(body.as_bytes())
            .into_owned()
            .collect();
        let token = match form.get("grant_type").map(String::as_str) {
            Some(GRANT_CLIENT_CREDENTIALS) => format!("tok-{n}"),
            Some(GRANT_TOKEN_EXCHANGE) => format!("ex-{}-{n}", form["subject_token"]),
            _ => {
                return (
                    StatusCode::BAD_REQUEST,
                    r#"{"error":"unsupported_grant_type"}"#,
                )
                    .into_response();
            }
        };
        let response: Response = axum::Json(serde_json::json!({
            "access_token": token, "token_type": "Bearer", "expires_in": life
        }))
        .into_response();
        response
    };
    let app = Router::new()
        .route("/token", post(answer))
        .with_state(count.clone());
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (
        Url::parse(&format!("http://{addr}/token")).expect("url"),
        count,
    )
}

const TIMEOUT: Duration = Duration::from_secs(5);

fn http() -> reqwest::Client {
    reqwest::Client::new()
}

fn client(url: &Url, secret: &str) -> OAuthClient {
    OAuthClient {
        token_url: Some(url.clone()),
        client_id: "gw".to_owned(),
        client_secret: Secret::new(secret),
        client_auth: ClientAuth::Basic,
        scopes: vec!["a2a.invoke".to_owned()],
        audience: None,
        resource: Some("https://agent.test/".to_owned()),
    }
}

#[tokio::test]
async fn fifty_concurrent_calls_make_one_request_until_the_token_nears_expiry() {
    let (url, count) = endpoint(1).await;
    let credentials = Arc::new(Credentials::new(
        UpstreamAuth::ClientCredentials(client(&url, "s3cret")),
        TIMEOUT,
    ));
    let shared = http();
    let calls = (0..50).map(|_| {
        let credentials = credentials.clone();
        let http = shared.clone();
        tokio::spawn(async move { credentials.token(&http, None, None).await })
    });
    let tokens: Vec<String> = futures::future::join_all(calls)
        .await
        .into_iter()
        .map(|t| t.expect("joined").expect("a token").expose().to_owned())
        .collect();
    assert!(tokens.iter().all(|t| t == "tok-1"), "{tokens:?}");
    assert_eq!(count.load(Ordering::SeqCst), 1);
    // Refreshed a tenth of its life (1 s) before it ends.
    tokio::time::sleep(Duration::from_millis(950)).await;
    let again = credentials
        .token(&http(), None, None)
        .await
        .expect("a token");
    assert_eq!(again.expose(), "tok-2");
    assert_eq!(count.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_refused_token_is_renewed_once_when_it_is_the_likely_cause() {
    let (url, count) = endpoint(3600).await;
    let credentials = Credentials::new(
        UpstreamAuth::ClientCredentials(client(&url, "s3cret")),
        TIMEOUT,
    );
    let renewed = |token, invalid_token| renewed(&credentials, token, invalid_token);
    let first = credentials
        .token(&http(), None, None)
        .await
        .expect("a token");
    // A young token refused without `invalid_token`: the 401 stands.
    assert!(renewed(&first, false).await.is_none());
    assert_eq!(count.load(Ordering::SeqCst), 1);
    let second = renewed(&first, true).await.expect("renewed");
    assert_eq!(second.expose(), "tok-2");
    // A late refusal of the old token gets the new one, unfetched.
    assert_eq!(renewed(&first, true).await, Some(second.clone()));
    // The new one refused at once: renewed moments ago, the 401 stands.
    assert!(renewed(&second, true).await.is_none());
    assert_eq!(
        credentials
            .token(&http(), None, None)
            .await
            .expect("a token"),
        second
    );
    assert_eq!(count.load(Ordering::SeqCst), 2);
}

/// What `credentials` sends a call again with after a 401 to `token`.
async fn renewed(credentials: &Credentials, token: &Secret, invalid_token: bool) -> Option<Secret> {
    let refused = Refused {
        token,
        invalid_token,
    };
    credentials.renewed(&http(), None, None, &refused).await
}

/// An entry holding `token`, fetched `age` ago, renewed `renewed` ago.
fn entry(token: &Secret, age: Duration, renewed: Option<Duration>) -> (Entry, Instant) {
    let now = Instant::now() + Duration::from_secs(3600);
    let entry = Entry {
        held: Some(Held {
            token: token.clone(),
            fetched_at: now - age,
            refresh_at: now + Duration::from_secs(60),
        }),
        failed: None,
        renewed_at: renewed.map(|ago| now - ago),
    };
    (entry, now)
}

#[test]
fn a_401_renews_a_stale_or_named_token_once_per_gap() {
    let token = Secret::new("t");
    let other = Secret::new("u");
    let refused = |invalid_token| Refused {
        token: &token,
        invalid_token,
    };
    let young = Duration::from_secs(1);
    let old = STALE_AFTER;
    for (age, renewed, invalid_token, fetches) in [
        (young, None, false, false),
        (young, None, true, true),
        (old, None, false, true),
        (
            old,
            Some(RENEWAL_GAP - Duration::from_millis(1)),
            true,
            false,
        ),
        (old, Some(RENEWAL_GAP), false, true),
    ] {
        let (mut entry, now) = entry(&token, age, renewed);
        let answer = entry.after_refusal(&refused(invalid_token), now);
        assert_eq!(
            answer.is_none(),
            fetches,
            "{age:?} {renewed:?} {invalid_token}"
        );
        // A renewal is noted; the refused token stays until replaced.
        assert_eq!(entry.renewed_at == Some(now), fetches);
        assert!(entry.held.is_some());
    }
    // Another token held: it is the answer, whatever the challenge.
    let (mut entry, now) = entry(&other, old, None);
    assert_eq!(entry.after_refusal(&refused(true), now), Some(other));
    assert_eq!(entry.renewed_at, None);
}

#[tokio::test]
async fn an_exchange_is_per_caller_and_errors_show_no_secret() {
    let (url, _) = endpoint(3600).await;
    let credentials = Credentials::new(
        UpstreamAuth::TokenExchange {
            client: client(&url, "s3cret"),
            actor: false,
        },
        TIMEOUT,
    );
    let alice = credentials
        .token(&http(), Some("alice-jwt"), None)
        .await
        .expect("a token");
    let bob = credentials
        .token(&http(), Some("bob-jwt"), None)
        .await
        .expect("a token");
    let alice_again = credentials
        .token(&http(), Some("alice-jwt"), None)
        .await
        .expect("a token");
    assert_eq!(
        (alice.expose(), bob.expose()),
        ("ex-alice-jwt-1", "ex-bob-jwt-2")
    );
    assert_eq!(alice_again, alice);
    assert!(matches!(
        credentials.token(&http(), None, None).await,
        Err(TokenError::NoSubject)
    ));

    let wrong = Credentials::new(
        UpstreamAuth::ClientCredentials(client(&url, "not-the-secret")),
        TIMEOUT,
    );
    let err = wrong.token(&http(), None, None).await.expect_err("refused");
    let shown = format!("{err} {err:?}");
    assert_eq!(
        err.to_string(),
        "the token endpoint refused the request: HTTP 401 (invalid_client)"
    );
    assert!(!shown.contains("not-the-secret"), "{shown}");
    assert_eq!(
        format!("{:?}", client(&url, "not-the-secret").client_secret),
        "***"
    );

    let nowhere = Url::parse("http://127.0.0.1:9/token").expect("url");
    let unreachable = Credentials::new(
        UpstreamAuth::ClientCredentials(client(&nowhere, "s3cret")),
        TIMEOUT,
    );
    let err = unreachable
        .token(&http(), None, None)
        .await
        .expect_err("unreachable");
    assert!(matches!(err, TokenError::Unreachable(_)), "{err}");
}

#[tokio::test]
async fn an_endless_life_is_capped_and_a_failure_is_shared_for_a_moment() {
    // An `expires_in` past any clock: kept a day, no overflow.
    let (url, count) = endpoint(u64::MAX).await;
    let credentials = Credentials::new(
        UpstreamAuth::ClientCredentials(client(&url, "s3cret")),
        TIMEOUT,
    );
    assert!(credentials.token(&http(), None, None).await.is_ok());
    assert!(credentials.token(&http(), None, None).await.is_ok());
    assert_eq!(count.load(Ordering::SeqCst), 1);
    // Ten calls right after a refusal: one request.
    let (url, count) = endpoint(60).await;
    let wrong = Credentials::new(
        UpstreamAuth::ClientCredentials(client(&url, "wrong")),
        TIMEOUT,
    );
    for _ in 0..10 {
        assert!(wrong.token(&http(), None, None).await.is_err());
    }
    assert_eq!(count.load(Ordering::SeqCst), 1);
    assert!(matches!(
        wrong.failing(),
        Some(TokenError::Refused { status: 401, .. })
    ));
}
