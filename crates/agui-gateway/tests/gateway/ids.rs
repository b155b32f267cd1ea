//! Event ids: every frame of a converted stream carries `id: <run
//! key>.<n>`, `n` strictly increasing from 1, one key per run; a reconnect
//! naming a run the gateway does not keep (`Last-Event-ID`) is refused with
//! 410 before any upstream call, never answered with a second run of the
//! same request. Reconnects that work: `resume.rs`.

use serde_json::{Value, json};

use crate::support::{agent, client, gateway_for, received_by};

/// The `id:` values of an SSE body, checked: one per frame, one run key,
/// numbers 1, 2, 3, …; returns the key.
fn check_ids(body: &str) -> String {
    let frames: Vec<&str> = body
        .split_terminator("\n\n")
        .filter(|f| !f.starts_with(':'))
        .collect();
    assert!(frames.len() > 3, "{body}");
    let mut key = None;
    for (n, frame) in frames.iter().enumerate() {
        let ids: Vec<&str> = frame
            .lines()
            .filter_map(|l| l.strip_prefix("id: "))
            .collect();
        assert_eq!(ids.len(), 1, "one id per frame: {frame}");
        let (run, number) = ids[0].split_once('.').expect("<run key>.<n>");
        assert_eq!(number, (n + 1).to_string(), "{frame}");
        assert_eq!(*key.get_or_insert(run), run, "one key per run");
        assert!(!run.is_empty() && run.bytes().all(|b| b.is_ascii_alphanumeric()));
    }
    key.unwrap().to_owned()
}

#[tokio::test]
#[ignore = "tier 2: real A2A agents, tests/agents/setup.sh"]
async fn every_converted_frame_carries_an_increasing_id_and_a_reconnect_is_refused() {
    let agent = agent("input");
    let gw = gateway_for(&agent.url(), &[]);
    let run = |thread: &str| {
        json!({ "threadId": thread, "runId": "r1",
        "messages": [{ "id": format!("{thread}-u1"), "role": "user", "content": "hello" }] })
    };
    let post = |url: String, body: Value, resume: Option<&'static str>| {
        let mut request = client().post(url).json(&body);
        if let Some(id) = resume {
            request = request.header("Last-Event-ID", id);
        }
        async move { request.send().await.unwrap() }
    };
    let agui = format!("{}/agui", gw.url());
    let first = post(agui.clone(), run("ids-1"), None)
        .await
        .text()
        .await
        .unwrap();
    let second = post(agui.clone(), run("ids-2"), None)
        .await
        .text()
        .await
        .unwrap();
    assert_ne!(
        check_ids(&first),
        check_ids(&second),
        "each run has its own key"
    );
    // The Hector format on a negotiated route: each named event its id.
    let hector = post(
        format!("{}/v1/agents/default/stream?format=hector", gw.url()),
        json!({ "request": { "role": "user", "parts": [{ "text": "hello" }] } }),
        None,
    )
    .await
    .text()
    .await
    .unwrap();
    check_ids(&hector);

    // A reconnect: 410, no stream, and the agent never sees the request.
    for url in [
        agui,
        format!("{}/v1/agents/default/stream?format=agui", gw.url()),
    ] {
        let refused = post(url, run("ids-3"), Some("0123456789abcdef.3")).await;
        assert_eq!(refused.status(), 410);
        let error: Value = refused.json().await.unwrap();
        assert_eq!(error["error"]["code"], "RUN_NOT_RESUMABLE");
    }
    let received = received_by(&agent).await;
    assert!(
        !received.iter().any(|m| m["contextId"] == "ids-3"),
        "{received:?}"
    );
}
