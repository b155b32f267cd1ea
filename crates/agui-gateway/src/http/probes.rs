//! The probes and the metrics: `/healthz`, `/readyz`, `/metrics`, on the
//! main router and on the admin listener's own (`admin_router`).

use a2a_agui::ErrorCode;
use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};

use super::error::ApiError;
use crate::signing::{Policy, Verdict};
use crate::state::AppHandle;
use crate::upstream::{Agent, CardStatus};

/// The admin listener's routes: probes and metrics, for the cluster only.
pub fn admin_router(state: AppHandle) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .with_state(state)
}

pub(super) async fn healthz() -> impl IntoResponse {
    axum::Json(json!({ "status": "ok" }))
}

/// Ready when not draining and every upstream served its card at the last
/// background refresh: a probe never calls an upstream, except (one at a
/// time, at most every 2 s) before an agent's first refresh has finished.
pub(super) async fn readyz(State(state): State<AppHandle>) -> Result<Response, ApiError> {
    if state.shutdown.unready.is_cancelled() {
        return Err(ApiError::unavailable(
            ErrorCode::GatewayDraining,
            "draining",
        ));
    }
    // Ready means this process takes requests. An agent that is down is
    // reported (here, in `/v1/agents` and as `agui_gateway_agent_up`),
    // but does not take the pod out: every replica shares the same
    // agents, and taking them all out would refuse the agents that work.
    // A journal the configuration gets wrong does: runs would not be
    // shared, on any replica, and no wait mends it. Redis down for a while
    // does not (runs go on unshared, and the log says so).
    if let Some(unusable) = state.journal_health.as_ref().and_then(|h| h.unusable())
        && unusable.misconfigured
    {
        return Err(ApiError::unavailable(
            ErrorCode::JournalUnavailable,
            format!(
                "the shared journal cannot be used as configured: {}",
                unusable.reason
            ),
        ));
    }
    let mut agents = serde_json::Map::new();
    for (name, agent) in &state.agents {
        agents.insert(name.clone(), agent_health(agent).await);
    }
    Ok(axum::Json(json!({ "ready": true, "agents": agents })).into_response())
}

/// An agent's health from its cached card state (fetched once if never),
/// and how runs reach it (`reachedBy`: its binding, dialect and mode,
/// never its address).
pub(super) async fn agent_health(agent: &Agent) -> Value {
    if matches!(agent.card_status(), CardStatus::Unknown) {
        let _ = agent.current_card().await;
    }
    let mut health = health(agent);
    let route = agent
        .card()
        .map_or_else(|| agent.configured_route(), |c| c.route.clone());
    health["reachedBy"] = json!({
        "binding": route.binding().as_str(),
        "version": route.version().as_str(),
        "mode": route.mode.as_str(),
    });
    health
}

fn health(agent: &Agent) -> Value {
    if let Some(err) = agent.credentials.as_ref().and_then(|c| c.failing()) {
        // The agent may be up, but no run can call it without a token.
        return json!({ "ready": false, "error": format!("no token for the agent: {err}") });
    }
    match agent.card_status() {
        CardStatus::Ready => json!({ "ready": true }),
        CardStatus::Failing(reason) => json!({ "ready": false, "error": reason }),
        CardStatus::Unknown => {
            json!({ "ready": false, "error": "the agent card has not been fetched yet" })
        }
    }
}

pub(super) async fn metrics(State(state): State<AppHandle>) -> Response {
    for (name, agent) in &state.agents {
        if agent.config.card_signatures != Policy::Off {
            let verdict = agent.card_signature();
            state
                .metrics
                .set_card_signature(name, verdict.as_ref().map(Verdict::as_str));
        }
    }
    let agents_up: Vec<(&str, bool)> = state
        .agents
        .iter()
        .map(|(name, agent)| {
            (
                name.as_str(),
                matches!(agent.card_status(), CardStatus::Ready),
            )
        })
        .collect();
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        state
            .metrics
            .render(state.journal.as_ref().map(|j| j.usage()), &agents_up),
    )
        .into_response()
}
