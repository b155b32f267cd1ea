//! The CopilotKit runtime protocol, served by the gateway itself: a
//! CopilotKit app points `runtimeUrl` at `<gateway>/copilotkit` and needs
//! no Node runtime (`@copilotkit/core` 1.75's REST transport and its
//! single-route envelope).
//!
//! This module owns only the runtime's shapes: its routes under the base
//! path, the envelope, `/info`, the stop answer, the thread routes and the
//! runtime's error bodies (unknown agent 404, invalid body 400, bad stop
//! body 400, 404 and 405 for other paths), all before any agent call. A run
//! is an AG-UI run (`agui::run`, AG-UI whatever the agent's format), a
//! connect the thread's replay (`resume::replay`), a stop `resume::stop_thread`.
//! Authentication, CORS, rate limits, metrics (`route="copilotkit"`), the
//! access log and traces apply as on `/agui`: the routes sit behind the
//! same gate.

use std::sync::Arc;

use agui_journal::{CallerDigest, ThreadRef};
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use super::agui_routes::{agui_input, read_body};
use super::error::ApiError;
use super::gate;
use crate::obs::access::{AccessNote, Mode};
use crate::resume::{self, MAX_ID_BYTES, Stopped, ThreadAsk, WhenEmpty};
use crate::state::{AppHandle, AppState};
use crate::upstream::Agent;
use crate::upstream::outbound::Forwarded;

/// What one request asks, once its path (or envelope) is read.
enum RuntimeCall {
    Info {
        single: bool,
    },
    Run(String),
    Connect(String),
    Stop {
        agent: String,
        thread: String,
    },
    Threads(Option<String>),
    Messages {
        thread: String,
        agent: Option<String>,
    },
}

/// Every request under the base path.
pub async fn handle(State(state): State<AppHandle>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let base = state.config.copilotkit_path.as_deref().unwrap_or_default();
    let rest = parts.uri.path().strip_prefix(base).unwrap_or_default();
    let segments: Vec<String> = rest
        .split('/')
        .filter(|s| !s.is_empty())
        .map(decoded)
        .collect();
    let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
    let query = parts.uri.query().unwrap_or_default();
    let (call, allow) = match segments.as_slice() {
        [] => (None, "POST"),
        ["info"] => (Some(RuntimeCall::Info { single: false }), "GET"),
        ["agent", id, "run"] => (Some(RuntimeCall::Run((*id).to_owned())), "POST"),
        ["agent", id, "connect"] => (Some(RuntimeCall::Connect((*id).to_owned())), "POST"),
        ["agent", id, "stop", thread] => (
            Some(RuntimeCall::Stop {
                agent: (*id).to_owned(),
                thread: (*thread).to_owned(),
            }),
            "POST",
        ),
        other => match thread_route(other, query) {
            Some(call) => (Some(call), "GET"),
            None => return runtime_error(StatusCode::NOT_FOUND, json!({ "error": "Not found" })),
        },
    };
    if parts.method.as_str() != allow {
        let mut response = runtime_error(
            StatusCode::METHOD_NOT_ALLOWED,
            json!({ "error": "Method not allowed" }),
        );
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static(allow));
        return response;
    }
    let body = match read_body(&state, body).await {
        Ok(body) => body,
        Err(err) => return err.into_response(),
    };
    let (call, body) = match call {
        Some(call) => (call, body),
        None => match envelope(&parts, &body) {
            Ok(opened) => opened,
            Err(response) => return response,
        },
    };
    match serve(&state, &parts, call, body).await {
        Ok(response) => response,
        Err(err) => err.into_response(),
    }
}

async fn serve(
    state: &AppHandle,
    parts: &Parts,
    call: RuntimeCall,
    body: Bytes,
) -> Result<Response, ApiError> {
    match call {
        RuntimeCall::Info { single } => Ok(info(state, parts, single).await),
        RuntimeCall::Run(name) => {
            let agent = match agent(state, parts, &name) {
                Ok(agent) => agent,
                Err(response) => return Ok(response),
            };
            if let Err(response) = run_input(&body) {
                return Ok(response);
            }
            let forwarded = forwarded(&agent, parts).await;
            let run = agui_input(
                state.clone(),
                agent,
                parts,
                forwarded,
                body,
                Mode::CopilotKit,
            );
            Ok(run.await.unwrap_or_else(invalid_body))
        }
        RuntimeCall::Connect(name) => {
            let agent = match agent(state, parts, &name) {
                Ok(agent) => agent,
                Err(response) => return Ok(response),
            };
            if let Err(response) = run_input(&body) {
                return Ok(response);
            }
            noted(state, parts, agent.name());
            let forwarded = forwarded(&agent, parts).await.usable()?;
            let caller = caller(parts);
            let request = (&parts.headers, &forwarded);
            let connect = resume::connect(
                state,
                &agent,
                (&caller, gate::reader(&caller, &parts.extensions)),
                request,
                &body,
                WhenEmpty::EmptyStream,
            );
            Ok(connect
                .await
                .map_err(ApiError::from)
                .unwrap_or_else(invalid_body))
        }
        RuntimeCall::Stop {
            agent: name,
            thread,
        } => {
            let agent = match agent(state, parts, &name) {
                Ok(agent) => agent,
                Err(response) => return Ok(response),
            };
            let run_id = match stop_body(&body) {
                Ok(run_id) => run_id,
                Err(response) => return Ok(response),
            };
            if thread.is_empty() || thread.len() > MAX_ID_BYTES {
                return Ok(runtime_error(
                    StatusCode::BAD_REQUEST,
                    json!({ "error": "Invalid stop request" }),
                ));
            }
            noted(state, parts, agent.name());
            let forwarded = forwarded(&agent, parts).await.usable()?;
            let at = ThreadRef::new(agent.name(), &caller(parts), &thread);
            let stopped =
                resume::stop_thread(state, &agent, &at, run_id.as_deref(), &forwarded).await;
            Ok(axum::Json(stop_answer(stopped, &thread, run_id.as_deref())).into_response())
        }
        RuntimeCall::Threads(name) => {
            let Some(name) = name else {
                return Ok(runtime_error(
                    StatusCode::BAD_REQUEST,
                    json!({ "error": "Missing agentId" }),
                ));
            };
            let agent = match agent(state, parts, &name) {
                Ok(agent) => agent,
                Err(response) => return Ok(response),
            };
            noted(state, parts, agent.name());
            let forwarded = forwarded(&agent, parts).await.usable()?;
            let listed = resume::threads(state, &agent, &caller(parts), &forwarded).await;
            let threads: Vec<Value> = listed
                .iter()
                .map(|t| {
                    json!({
                        "id": t.id, "name": null, "agentId": agent.name(),
                        "organizationId": "", "createdById": "", "archived": false,
                        "createdAt": iso8601(t.created_ms), "updatedAt": iso8601(t.updated_ms),
                    })
                })
                .collect();
            Ok(axum::Json(json!({ "threads": threads, "nextCursor": null })).into_response())
        }
        RuntimeCall::Messages {
            thread,
            agent: name,
        } => {
            let agent = match name {
                Some(name) => match agent(state, parts, &name) {
                    Ok(agent) => agent,
                    Err(response) => return Ok(response),
                },
                None => state.default_agent("copilotkit/agent/{name}/…")?,
            };
            gate::allowed(state, &parts.extensions, &agent)?;
            if thread.len() > MAX_ID_BYTES {
                return Ok(runtime_error(
                    StatusCode::NOT_FOUND,
                    json!({ "error": "Not found" }),
                ));
            }
            noted(state, parts, agent.name());
            let forwarded = forwarded(&agent, parts).await.usable()?;
            let caller = caller(parts);
            let ask = ThreadAsk {
                agent: &agent,
                thread: ThreadRef::new(agent.name(), &caller, &thread),
                thread_id: &thread,
                run_id: None,
                forwarded: &forwarded,
                reader: gate::reader(&caller, &parts.extensions),
            };
            Ok(resume::replay::messages(state, ask, messages_body).await?)
        }
    }
}

/// `{method, params, body}` at the base path: the call it names, and the
/// body its handler reads.
#[allow(clippy::result_large_err)]
fn envelope(parts: &Parts, body: &[u8]) -> Result<(RuntimeCall, Bytes), Response> {
    let invalid = |status: StatusCode, message: &str| {
        runtime_error(
            status,
            json!({ "error": "invalid_request", "message": message }),
        )
    };
    let json_type = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().contains("application/json"));
    if !json_type {
        return Err(invalid(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "the single-route envelope is JSON: send Content-Type: application/json",
        ));
    }
    let Ok(Value::Object(mut envelope)) = serde_json::from_slice::<Value>(body) else {
        return Err(invalid(
            StatusCode::BAD_REQUEST,
            "the body is not a JSON object",
        ));
    };
    let method = envelope
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let params = match envelope.remove("params") {
        Some(Value::Object(params)) => params,
        _ => Map::new(),
    };
    let param = |key: &str| {
        params
            .get(key)
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
            .ok_or_else(|| {
                invalid(
                    StatusCode::BAD_REQUEST,
                    &format!("Missing or invalid parameter '{key}'"),
                )
            })
    };
    let inner = envelope.remove("body");
    let inner_bytes = |required: bool| match &inner {
        Some(value) => Ok(Bytes::from(serde_json::to_vec(value).unwrap_or_default())),
        None if required => Err(invalid(
            StatusCode::BAD_REQUEST,
            "Missing request body for JSON handler",
        )),
        None => Ok(Bytes::new()),
    };
    let call = match method.as_str() {
        "info" => RuntimeCall::Info { single: true },
        "agent/run" => RuntimeCall::Run(param("agentId")?),
        "agent/connect" => RuntimeCall::Connect(param("agentId")?),
        "agent/stop" => RuntimeCall::Stop {
            agent: param("agentId")?,
            thread: param("threadId")?,
        },
        "resource/request" => {
            let path = param("path")?;
            let (path, query) = path.split_once('?').unwrap_or((&path, ""));
            let segments: Vec<String> = path
                .split('/')
                .filter(|s| !s.is_empty())
                .map(decoded)
                .collect();
            let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
            let get = params.get("httpMethod").and_then(Value::as_str) == Some("GET");
            match thread_route(&segments, query).filter(|_| get) {
                Some(call) => call,
                None => {
                    return Err(runtime_error(
                        StatusCode::NOT_FOUND,
                        json!({ "error": "Not found" }),
                    ));
                }
            }
        }
        other => {
            let named: String = other.chars().take(64).collect();
            return Err(invalid(
                StatusCode::BAD_REQUEST,
                &format!("Unsupported method '{named}'"),
            ));
        }
    };
    let required = matches!(call, RuntimeCall::Run(_) | RuntimeCall::Connect(_));
    Ok((call, inner_bytes(required)?))
}

/// The read-only thread routes (GET), as paths or as the envelope's
/// `resource/request`.
fn thread_route(segments: &[&str], query: &str) -> Option<RuntimeCall> {
    match segments {
        ["threads"] => Some(RuntimeCall::Threads(query_param(query, "agentId"))),
        ["threads", thread, "messages"] => Some(RuntimeCall::Messages {
            thread: (*thread).to_owned(),
            agent: query_param(query, "agentId"),
        }),
        _ => None,
    }
}

/// `GET /info`: the agents this caller may use, their descriptions from
/// their cards.
async fn info(state: &AppHandle, parts: &Parts, single: bool) -> Response {
    state
        .metrics
        .count_request(crate::obs::metrics::NO_AGENT, Mode::CopilotKit);
    let mut agents = Map::new();
    for (name, agent) in &state.agents {
        if gate::allowed(state, &parts.extensions, agent).is_err() {
            continue;
        }
        let card = agent.card();
        let description = card
            .as_ref()
            .and_then(|c| c.card["description"].as_str().map(str::to_owned))
            .unwrap_or_default();
        let mut entry =
            json!({ "name": name, "className": "A2AAgent", "description": description });
        // Where CopilotKit's runtime puts an agent's `getCapabilities()`.
        if let Some(capabilities) = state.capabilities(agent, card.as_deref()) {
            entry["capabilities"] = capabilities;
        }
        agents.insert(name.clone(), entry);
    }
    // `inspect` would have the UI ask for a thread's events and state too;
    // a caller with no identity gets no thread list (`resume::threads`).
    let list = !caller(parts).is_anonymous();
    let endpoints =
        json!({ "list": list, "inspect": false, "mutations": false, "realtimeMetadata": false });
    let mut body = json!({
        "version": env!("CARGO_PKG_VERSION"),
        "agents": agents,
        "audioFileTranscriptionEnabled": false,
        "mode": "sse",
        "threadEndpoints": endpoints,
        "suggestions": false,
        "a2uiEnabled": false,
        "openGenerativeUIEnabled": false,
        "telemetryDisabled": true,
    });
    if single {
        body["threadEndpoints"] = json!({ "list": false, "inspect": false, "mutations": false, "realtimeMetadata": false });
        body["singleRoute"] = json!({ "resourceOperations": true, "threadEndpoints": endpoints });
    }
    axum::Json(body).into_response()
}

/// The agent a route names, for this caller; the runtime's 404 when there
/// is none (a refused caller gets the gateway's 403).
#[allow(clippy::result_large_err)]
fn agent(state: &AppState, parts: &Parts, name: &str) -> Result<Arc<Agent>, Response> {
    let agent = state.named(name).map_err(|_| {
        let shown: String = name.chars().take(128).collect();
        runtime_error(
            StatusCode::NOT_FOUND,
            json!({ "error": "Agent not found", "message": format!("Agent '{shown}' does not exist") }),
        )
    })?;
    gate::allowed(state, &parts.extensions, &agent).map_err(IntoResponse::into_response)?;
    Ok(agent)
}

/// A body the runtime would take as a `RunAgentInput`: a JSON object with
/// a `threadId` and a `messages` array (the rest is `agui::input`'s to
/// judge).
#[allow(clippy::result_large_err)]
fn run_input(body: &[u8]) -> Result<(), Response> {
    let value: Value =
        serde_json::from_slice(body).map_err(|_| invalid_body_response("the body is not JSON"))?;
    if !value["threadId"].is_string() {
        return Err(invalid_body_response("threadId must be a string"));
    }
    if !value["messages"].is_array() {
        return Err(invalid_body_response("messages must be an array"));
    }
    Ok(())
}

/// A client mistake in a run or connect body, in the runtime's shape; any
/// other error as the gateway writes it.
fn invalid_body(err: ApiError) -> Response {
    if err.status == StatusCode::BAD_REQUEST {
        invalid_body_response(&err.message)
    } else {
        err.into_response()
    }
}

fn invalid_body_response(details: &str) -> Response {
    runtime_error(
        StatusCode::BAD_REQUEST,
        json!({ "error": "Invalid request body", "details": details }),
    )
}

/// A stop body: none, `{}` or `{"runId": "…"}`.
#[allow(clippy::result_large_err)]
fn stop_body(body: &[u8]) -> Result<Option<String>, Response> {
    let refused = |error: &str| runtime_error(StatusCode::BAD_REQUEST, json!({ "error": error }));
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let Ok(Value::Object(fields)) = serde_json::from_slice::<Value>(body) else {
        return Err(refused("Invalid stop request"));
    };
    if fields.keys().any(|k| k != "runId") {
        return Err(refused("Invalid stop request"));
    }
    match fields.get("runId") {
        None => Ok(None),
        Some(Value::String(id)) if !id.is_empty() && id.len() <= MAX_ID_BYTES => {
            Ok(Some(id.clone()))
        }
        Some(_) => Err(refused("Invalid runId")),
    }
}

fn stop_answer(stopped: Stopped, thread: &str, run_id: Option<&str>) -> Value {
    let thread: String = thread.chars().take(128).collect();
    match stopped {
        Stopped::Stopping { .. } => json!({
            "stopped": true,
            "interrupt": { "type": "RUN_ERROR", "message": "Run stopped by user", "code": "STOPPED" },
        }),
        Stopped::NoRun => {
            let message = match run_id {
                Some(run) => {
                    let run: String = run.chars().take(128).collect();
                    format!("Run '{run}' is not the active run for thread '{thread}'.")
                }
                None => format!("No active run for thread '{thread}'."),
            };
            json!({ "stopped": false, "message": message })
        }
        Stopped::NotYetNamed => json!({
            "stopped": false,
            "message": "The agent has not named the run's task yet: try again in a moment.",
        }),
    }
}

/// An AG-UI message as the runtime's messages route lists it: an
/// assistant's calls as `{id, name, args}`.
/// The messages route's body.
fn messages_body(messages: Vec<Value>) -> Vec<u8> {
    let messages: Vec<Value> = messages.into_iter().map(runtime_message).collect();
    // A `Value` always serialises.
    serde_json::to_vec(&json!({ "messages": messages })).unwrap_or_default()
}

fn runtime_message(mut message: Value) -> Value {
    if let Some(Value::Array(calls)) = message.get_mut("toolCalls") {
        for call in calls.iter_mut() {
            let name = call.pointer("/function/name").cloned().unwrap_or_default();
            let args = call
                .pointer("/function/arguments")
                .cloned()
                .unwrap_or_default();
            *call = json!({ "id": call["id"], "name": name, "args": args });
        }
    }
    message
}

fn runtime_error(status: StatusCode, body: Value) -> Response {
    (status, axum::Json(body)).into_response()
}

/// The request's headers for the agent, with the agent's token when it
/// has credentials (`Forwarded::authorized`).
async fn forwarded(agent: &Agent, parts: &Parts) -> Forwarded {
    Forwarded::new(agent, &parts.headers, parts.extensions.get())
        .traced(parts.extensions.get())
        .authorized(agent, parts.extensions.get())
        .await
}

fn caller(parts: &Parts) -> CallerDigest {
    gate::caller_digest(&gate::scope(&parts.extensions), &parts.headers)
}

fn noted(state: &AppState, parts: &Parts, agent: &str) {
    AccessNote::noted(&parts.extensions, agent, Mode::CopilotKit);
    state.metrics.count_request(agent, Mode::CopilotKit);
}

/// One path segment, percent-decoded (a segment that does not decode to
/// UTF-8 keeps the replacement character and names nothing).
fn decoded(segment: &str) -> String {
    url::form_urlencoded::parse(format!("s={}", segment.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, value)| value.into_owned())
        .unwrap_or_default()
}

fn query_param(query: &str, key: &str) -> Option<String> {
    url::form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
        .filter(|v| !v.is_empty())
}

/// Milliseconds since the epoch as an RFC 3339 UTC timestamp.
fn iso8601(ms: u64) -> String {
    let secs = ms / 1000;
    let days = secs / 86_400;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        ms % 1000
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc3339() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(1_795_564_800_123), "2026-11-25T00:00:00.123Z");
        assert_eq!(iso8601(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn stop_bodies() {
        assert_eq!(stop_body(b"").ok(), Some(None));
        assert_eq!(stop_body(b"{}").ok(), Some(None));
        assert_eq!(
            stop_body(br#"{"runId":"r"}"#).ok(),
            Some(Some("r".to_owned()))
        );
        for bad in [
            &b"[]"[..],
            b"{\"x\":1}",
            b"{\"runId\":\"\"}",
            b"{\"runId\":3}",
            b"nope",
        ] {
            assert!(stop_body(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn calls_are_listed_the_runtime_way() {
        let message = json!({"id": "m", "role": "assistant", "toolCalls": [
            {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]});
        assert_eq!(
            runtime_message(message)["toolCalls"],
            json!([{"id": "c", "name": "f", "args": "{}"}])
        );
    }
}
