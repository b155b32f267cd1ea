//! Conversion throughput on a realistic mixed A2A stream, beside a bare
//! `serde_json` parse and write of the same JSON documents.
//!
//! `cargo bench -p a2a-agui --bench convert`
//!
//! The stream mixes what real agents send: token-sized artifact chunks with
//! part metadata (a2a-sdk 1.x, 1.0 wrapper keys, JSON-RPC envelope), 0.3
//! status updates with text, Hector thinking and tool parts, Agent Stack
//! citations and a multimodal `commands` artifact.
#![allow(clippy::expect_used, clippy::unwrap_used)] // bench code

use std::hint::black_box;

use a2a_agui::{Options, OutputFormat, SequentialIds, StreamConverter, StreamEnd};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value, json};

/// One turn of a long-running agent: `chunks` artifact chunks plus the
/// other kinds of events around them.
fn turn(chunks: usize) -> Vec<Value> {
    let (t, c) = (
        "64ab273c-4cb2-42e2-acbf-5def8cde2eda",
        "e872cb54-1182-458d-b55f-e1c572dfed39",
    );
    let rpc = |result: Value| json!({ "jsonrpc": "2.0", "id": 1, "result": result });
    let mut items = vec![
        rpc(
            json!({ "task": { "id": t, "contextId": c, "status": { "state": "TASK_STATE_SUBMITTED" } } }),
        ),
        rpc(
            json!({ "kind": "status-update", "taskId": t, "contextId": c, "final": false,
            "status": { "state": "working", "timestamp": "2026-11-21T04:36:11.078169Z",
                "message": { "kind": "message", "messageId": "s1", "role": "agent", "parts": [{ "kind": "text", "text": "Thinking..." }] } } }),
        ),
    ];
    for block in 0..4 {
        items.push(rpc(json!({ "message": { "messageId": "msg-1", "role": "ROLE_AGENT", "parts": [
            { "text": format!("Considering option {block} of the request."), "metadata": { "event_type": "thinking", "block_type": "thinking", "block_id": "think-1", "block_index": 0 } }] } })));
    }
    items.push(rpc(json!({ "message": { "messageId": "msg-1", "role": "ROLE_AGENT", "parts": [
        { "data": { "data": { "id": "call-1", "name": "web_search", "arguments": { "query": "weather in Hangzhou" } } },
          "metadata": { "event_type": "tool_call", "tool_call_id": "call-1", "tool_name": "web_search" } }] } })));
    items.push(rpc(json!({ "message": { "messageId": "msg-1", "role": "ROLE_AGENT", "parts": [
        { "data": { "data": { "tool_call_id": "call-1", "content": "Sunny, 22C, light wind from the east", "error": "" } },
          "metadata": { "event_type": "tool_call", "tool_call_id": "call-1", "is_error": false, "is_final": true } }] } })));
    for i in 0..chunks {
        let mut update = json!({ "taskId": t, "contextId": c, "artifact": { "artifactId": "answer-1", "name": "answer",
            "parts": [{ "text": format!(" word{i}"), "metadata": { "chunkIndex": i as f64 } }], "metadata": { "kind": "llm-text" } } });
        if i > 0 {
            update["append"] = json!(true);
        }
        if i + 1 == chunks {
            update["lastChunk"] = json!(true);
        }
        items.push(rpc(json!({ "artifactUpdate": update })));
    }
    items.push(rpc(json!({ "kind": "status-update", "taskId": t, "contextId": c, "final": false, "status": { "state": "working",
        "message": { "kind": "message", "role": "agent", "messageId": "m3", "parts": [{ "kind": "text", "text": "Python leads AI." }],
            "metadata": { "https://a2a-extensions.agentstack.beeai.dev/ui/citation/v1": { "citations": [
                { "url": "https://ai-survey.com", "title": "AI Language Survey", "start_index": 0, "end_index": 15 }] } } } } })));
    items.push(rpc(json!({ "kind": "artifact-update", "taskId": t, "contextId": c, "append": true, "lastChunk": true,
        "artifact": { "artifactId": "a1", "parts": [{ "kind": "text", "text": "no rain." }],
            "metadata": { "commands": [{ "name": "VOLUME_SET", "params": [{ "name": "series", "value": "70", "normValue": "70" }], "commandRequestId": "cmd-1" }] } } })));
    items.push(rpc(json!({ "kind": "status-update", "taskId": t, "contextId": c, "final": true, "status": { "state": "completed" } })));
    items
}

struct Workload {
    documents: Vec<String>,
    sse_body: Vec<u8>,
}

fn workload() -> Workload {
    let documents: Vec<String> = turn(200).iter().map(Value::to_string).collect();
    let mut sse_body = Vec::new();
    for document in &documents {
        sse_body.extend_from_slice(b"data: ");
        sse_body.extend_from_slice(document.as_bytes());
        sse_body.extend_from_slice(b"\r\n\r\n");
    }
    Workload {
        documents,
        sse_body,
    }
}

fn convert_body(body: &[u8], format: OutputFormat, out: &mut Vec<u8>) {
    let mut stream = StreamConverter::new(
        Options::default(),
        SequentialIds::default(),
        format,
        16 << 20,
    );
    // 16 KiB reads, as hyper delivers them.
    for chunk in body.chunks(16 * 1024) {
        stream
            .feed_sse(chunk, Some(1_763_700_000_000), out)
            .unwrap();
    }
    stream
        .finish(StreamEnd::Eof, Some(1_763_700_000_000), out)
        .unwrap();
}

fn bench(c: &mut Criterion) {
    let work = workload();
    let events = work.documents.len() as u64;
    let bytes: usize = work.documents.iter().map(String::len).sum();
    eprintln!(
        "workload: {events} A2A events, {bytes} bytes of JSON ({} bytes per event on average)",
        bytes / work.documents.len()
    );
    let mut group = c.benchmark_group("mixed_stream");
    group.throughput(Throughput::Elements(events));
    let mut out = Vec::with_capacity(work.sse_body.len() * 2);
    group.bench_function("serde_json_parse_and_write", |b| {
        b.iter(|| {
            out.clear();
            for document in &work.documents {
                let value: Value = serde_json::from_str(black_box(document)).unwrap();
                serde_json::to_writer(&mut out, &value).unwrap();
            }
            black_box(out.len())
        })
    });
    group.bench_function("convert_sse_to_agui", |b| {
        b.iter(|| {
            out.clear();
            convert_body(black_box(&work.sse_body), OutputFormat::Agui, &mut out);
            black_box(out.len())
        })
    });
    group.bench_function("convert_sse_to_hector", |b| {
        b.iter(|| {
            out.clear();
            convert_body(black_box(&work.sse_body), OutputFormat::Hector, &mut out);
            black_box(out.len())
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
