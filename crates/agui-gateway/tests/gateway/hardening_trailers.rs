//! Issue 37, finding 5: a gRPC agent's trailers get the header policy its
//! answer's head gets (`headers::returned_headers`). A hostile agent
//! (a bare HTTP/2 server, as a gRPC agent answers) ends every call with
//! trailers naming what only the edge may set (cookies, CORS, HSTS,
//! `Alt-Svc`, `Clear-Site-Data`) and hop-by-hop headers: none reaches the
//! client, while the gRPC status, its message and the agent's own metadata
//! do.

use std::net::SocketAddr;

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Request, Response};

use crate::edge::write_config;
use crate::support::{Process, gateway};

/// What the agent's trailers carry that the client must not get.
const HOSTILE: [(&str, &str); 9] = [
    ("set-cookie", "session=agent-chosen; Path=/"),
    ("access-control-allow-origin", "*"),
    ("access-control-allow-credentials", "true"),
    (
        "strict-transport-security",
        "max-age=31536000; includeSubDomains",
    ),
    ("alt-svc", "h3=\":443\""),
    ("clear-site-data", "\"*\""),
    ("proxy-authenticate", "Basic realm=\"agent\""),
    ("trailer", "x-late"),
    ("content-length", "999"),
];

/// What they carry that is the agent's to say.
const KEPT: [(&str, &str); 4] = [
    ("grpc-status", "0"),
    ("grpc-message", "fine"),
    ("grpc-status-details-bin", "CAA"),
    ("x-agent-meta", "kept"),
];

/// A gRPC agent (HTTP/2 by prior knowledge) answering any call with one
/// empty message and `HOSTILE` and `KEPT` as trailers.
async fn hostile_grpc_agent() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let Ok(mut connection) = h2::server::handshake(socket).await else {
                    return;
                };
                while let Some(Ok((request, respond))) = connection.accept().await {
                    tokio::spawn(answer(request, respond));
                }
            });
        }
    });
    addr
}

async fn answer(request: Request<h2::RecvStream>, mut respond: h2::server::SendResponse<Bytes>) {
    let mut body = request.into_body();
    while let Some(Ok(chunk)) = body.data().await {
        let _ = body.flow_control().release_capacity(chunk.len());
    }
    let head = Response::builder()
        .status(200)
        .header("content-type", "application/grpc")
        .body(())
        .unwrap();
    let Ok(mut send) = respond.send_response(head, false) else {
        return;
    };
    let _ = send.send_data(Bytes::from_static(&[0, 0, 0, 0, 0]), false);
    let mut trailers = HeaderMap::new();
    for (name, value) in HOSTILE.iter().chain(KEPT.iter()) {
        trailers.append(
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        );
    }
    let _ = send.send_trailers(trailers);
}

/// One gRPC call of `method` on the gateway (HTTP/2 by prior knowledge):
/// the answer's trailers.
async fn trailers_of(gw: &Process, method: &str) -> HeaderMap {
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", gw.port))
        .await
        .unwrap();
    let (client, connection) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(connection);
    let mut client = client.ready().await.unwrap();
    let request = Request::post(format!("http://127.0.0.1:{}/{method}", gw.port))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(())
        .unwrap();
    let (response, mut send) = client.send_request(request, false).unwrap();
    send.send_data(Bytes::from_static(&[0, 0, 0, 0, 0]), true)
        .unwrap();
    let call = async {
        let response = response.await.unwrap();
        assert_eq!(response.status(), 200);
        let mut body = response.into_body();
        while let Some(chunk) = body.data().await {
            let _ = body.flow_control().release_capacity(chunk.unwrap().len());
        }
        body.trailers().await.unwrap().unwrap_or_default()
    };
    tokio::time::timeout(std::time::Duration::from_secs(20), call)
        .await
        .expect("an answer within 20 s")
}

#[tokio::test]
async fn no_hostile_trailer_of_a_grpc_agent_reaches_the_client() {
    let agent = hostile_grpc_agent().await;
    let file = write_config(
        "h37-trailers.toml",
        &format!("[agents.a]\nupstream = \"grpc://{agent}\"\na2a_version = \"1.0\"\n"),
    );
    let gw = gateway(&["--config", file.to_str().unwrap()]);
    for method in [
        "lf.a2a.v1.A2AService/SendMessage",
        "lf.a2a.v1.A2AService/SendStreamingMessage",
        "v1/agents/a/lf.a2a.v1.A2AService/GetTask",
        "lf.a2a.v1.A2AService/GetExtendedAgentCard",
    ] {
        let trailers = trailers_of(&gw, method).await;
        let reached: Vec<&str> = HOSTILE
            .iter()
            .map(|(name, _)| *name)
            .filter(|name| trailers.contains_key(*name))
            .collect();
        assert!(
            reached.is_empty(),
            "{method}: {} of {} hostile trailers reached the client: {reached:?}",
            reached.len(),
            HOSTILE.len()
        );
        for (name, value) in KEPT {
            assert_eq!(
                trailers.get(name).and_then(|v| v.to_str().ok()),
                Some(value),
                "{method}: {name} in {trailers:?}"
            );
        }
    }
}
