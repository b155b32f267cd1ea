//! One request to a token endpoint (RFC 6749 §4.4, RFC 8693): the form,
//! the client's authentication as configured, and the answer read within
//! 64 KiB. Errors name the endpoint's status and OAuth2 `error` code only.

use std::time::Duration;

use base64::Engine as _;
use serde_json::Value;
use url::Url;

use super::TokenError;
use crate::config::{ClientAuth, OAuthClient, Secret};

/// The most bytes a token endpoint's answer may hold.
const MAX_ANSWER_BYTES: usize = 64 * 1024;
/// The longest access token taken (each exchanged one is cached).
const MAX_TOKEN_BYTES: usize = 8 * 1024;

/// One POST to the token endpoint, the client authenticated as
/// configured; the answer's `access_token` and `expires_in`.
pub(super) async fn post(
    http: &reqwest::Client,
    client: &OAuthClient,
    url: &Url,
    mut form: Vec<(&'static str, String)>,
    timeout: Duration,
) -> Result<(Secret, Option<Duration>), TokenError> {
    let mut request = http.post(url.clone());
    match client.client_auth {
        ClientAuth::Basic => {
            // RFC 6749 §2.3.1: each part form-encoded, then Basic.
            let pair = format!(
                "{}:{}",
                encoded(&client.client_id),
                encoded(client.client_secret.expose())
            );
            let basic = base64::engine::general_purpose::STANDARD.encode(pair);
            if let Ok(mut value) = reqwest::header::HeaderValue::from_str(&format!("Basic {basic}"))
            {
                value.set_sensitive(true);
                request = request.header(reqwest::header::AUTHORIZATION, value);
            }
        }
        ClientAuth::Post => {
            form.push(("client_id", client.client_id.clone()));
            form.push(("client_secret", client.client_secret.expose().to_owned()));
        }
    }
    let body = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form.iter().map(|(k, v)| (*k, v.as_str())))
        .finish();
    let response = request
        .timeout(timeout)
        .header("content-type", "application/x-www-form-urlencoded")
        .header("accept", "application/json")
        .body(body)
        .send()
        .await
        .map_err(|err| TokenError::Unreachable(reason(&err)))?;
    let status = response.status();
    let answer = bounded_body(response).await?;
    let json: Value = serde_json::from_slice(&answer).unwrap_or(Value::Null);
    if !status.is_success() {
        // The OAuth2 error code is a short ASCII word; nothing else of
        // the answer is repeated.
        let error = json
            .get("error")
            .and_then(Value::as_str)
            .filter(|e| e.len() <= 64 && e.bytes().all(|b| b.is_ascii_graphic()))
            .map(str::to_owned);
        return Err(TokenError::Refused {
            status: status.as_u16(),
            error,
        });
    }
    let token = json
        .get("access_token")
        .and_then(Value::as_str)
        .filter(|t| {
            !t.is_empty()
                && t.len() <= MAX_TOKEN_BYTES
                && axum::http::HeaderValue::from_str(t).is_ok()
        })
        .ok_or(TokenError::Malformed("no usable access_token"))?;
    let life = json
        .get("expires_in")
        .and_then(|v| v.as_u64().or_else(|| v.as_str()?.parse().ok()))
        .map(Duration::from_secs);
    Ok((Secret::new(token), life))
}

/// The scopes, audience and resource the client asks for.
pub(super) fn target(client: &OAuthClient, form: &mut Vec<(&'static str, String)>) {
    if !client.scopes.is_empty() {
        form.push(("scope", client.scopes.join(" ")));
    }
    if let Some(audience) = &client.audience {
        form.push(("audience", audience.clone()));
    }
    if let Some(resource) = &client.resource {
        form.push(("resource", resource.clone()));
    }
}

fn encoded(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// What kind of failure, without the URL (it may carry a secret in its
/// query) or anything sent.
fn reason(err: &reqwest::Error) -> String {
    if err.is_timeout() {
        "timed out".to_owned()
    } else if err.is_connect() {
        "no connection".to_owned()
    } else {
        "the request failed".to_owned()
    }
}

async fn bounded_body(response: reqwest::Response) -> Result<Vec<u8>, TokenError> {
    use futures::StreamExt;
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|err| TokenError::Unreachable(reason(&err)))?;
        if body.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(TokenError::Malformed("the answer is larger than 64 KiB"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}
