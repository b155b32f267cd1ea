//! Property tests for issue 26: parts read by their shape and text streams
//! read by their behaviour, over shapes no framework uses yet.
//! - A tool call and its result, in random key families, spellings,
//!   declarations and dialects, keep the call's name, arguments and result.
//! - The same text as deltas, as cumulative snapshots (of a message id or
//!   an artifact), under one id or many, shows the same text once.
//! - A resend of any block kind (text, thought, call, result) adds nothing.
#![allow(clippy::expect_used, clippy::unwrap_used)] // test code: a panic is the failure report

mod common;

use a2a_agui::{Converter, Event, Options, StreamEnd};
use common::check_sequence;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

fn convert(items: &[Value]) -> Vec<Value> {
    let mut converter = Converter::with_sequential_ids(Options::default());
    let mut out: Vec<Event> = Vec::new();
    for item in items {
        converter.push_value(item, &mut out);
    }
    converter.finish(StreamEnd::Eof, &mut out);
    out.iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect()
}

fn rpc(result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "result": result})
}

fn task(state: &str) -> Value {
    rpc(json!({"kind": "task", "id": "t", "contextId": "c", "status": {"state": state}}))
}

fn status(message_id: &str, parts: Vec<Value>, state: &str) -> Value {
    let done = state == "completed";
    rpc(json!({
        "kind": "status-update", "taskId": "t", "contextId": "c", "final": done,
        "status": {"state": state, "message": {
            "kind": "message", "role": "agent", "messageId": message_id, "parts": parts}}
    }))
}

fn task_with_message(message_id: &str, text: &str, state: &str) -> Value {
    rpc(json!({
        "kind": "task", "id": "t", "contextId": "c",
        "status": {"state": state, "message": {
            "kind": "message", "role": "agent", "messageId": message_id,
            "parts": [{"kind": "text", "text": text}]}}
    }))
}

fn artifact(id: &str, text: &str, append: bool, last: bool) -> Value {
    rpc(json!({
        "kind": "artifact-update", "taskId": "t", "contextId": "c",
        "append": append, "lastChunk": last,
        "artifact": {"artifactId": id, "parts": [{"kind": "text", "text": text}]}
    }))
}

fn done() -> Value {
    rpc(
        json!({"kind": "status-update", "taskId": "t", "contextId": "c", "final": true,
               "status": {"state": "completed"}}),
    )
}

fn text_part(text: &str) -> Value {
    json!({"kind": "text", "text": text})
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

fn deltas(events: &[Value], kind: &str) -> String {
    of_type(events, kind)
        .iter()
        .filter_map(|e| e["delta"].as_str())
        .collect()
}

// ---------------------------------------------------------------------------
// Tool calls by key family.

/// How a part says it is a call or a result.
#[derive(Debug, Clone)]
enum Declaration {
    /// `type` or `kind` in the data, in this spelling.
    InData(&'static str, String),
    /// A media type on the part (1.0) or in its metadata (0.3).
    MediaType { on_part: bool, value: String },
    /// A type key in part metadata (`type`, a vendor's `<vendor>_type`).
    InMetadata(&'static str, String),
}

/// A declaration drawn from these spellings of the `type` word, media
/// types and metadata type values.
fn declaration(
    words: &'static [&'static str],
    media_types: &'static [&'static str],
    metadata_words: &'static [&'static str],
) -> impl Strategy<Value = Declaration> {
    prop_oneof![
        (
            prop_oneof![Just("type"), Just("kind")],
            prop::sample::select(words)
        )
            .prop_map(|(k, w)| Declaration::InData(k, w.to_owned())),
        (any::<bool>(), prop::sample::select(media_types)).prop_map(|(on_part, v)| {
            Declaration::MediaType {
                on_part,
                value: v.to_owned(),
            }
        }),
        (
            prop_oneof![Just("type"), Just("kagent_type"), Just("acme_type")],
            prop::sample::select(metadata_words)
        )
            .prop_map(|(k, w)| Declaration::InMetadata(k, w.to_owned())),
    ]
}

fn call_declaration() -> impl Strategy<Value = Declaration> {
    declaration(
        &[
            "tool-call",
            "tool_call",
            "toolCall",
            "ToolCall",
            "function_call",
            "functionCall",
            "tool_use",
            "tool-use",
        ],
        &[
            "application/vnd.acme.tool-call+json",
            "application/x-function-call",
            "application/vnd.x.function+json",
            "application/tool_use+json",
        ],
        &["function_call", "tool-call"],
    )
}

fn result_declaration() -> impl Strategy<Value = Declaration> {
    declaration(
        &[
            "tool-result",
            "tool_result",
            "toolResult",
            "function_response",
            "functionResult",
            "tool_output",
            "function_call_output",
        ],
        &[
            "application/vnd.acme.tool-result+json",
            "application/x-function-response",
            "application/tool_output+json",
        ],
        &["function_response", "tool_result"],
    )
}

/// A data part carrying `fields`, declared so, in 0.3 or 1.0 form.
fn data_part(mut fields: Map<String, Value>, declaration: &Declaration, v1: bool) -> Value {
    let mut part = Map::new();
    match declaration {
        Declaration::InData(key, word) => {
            fields.insert((*key).to_owned(), json!(word));
        }
        Declaration::MediaType {
            on_part: true,
            value,
        } => {
            part.insert("mediaType".into(), json!(value));
        }
        Declaration::MediaType { value, .. } => {
            part.insert("metadata".into(), json!({"mimeType": value}));
        }
        Declaration::InMetadata(key, word) => {
            part.insert("metadata".into(), json!({*key: word}));
        }
    }
    if !v1 {
        part.insert("kind".into(), json!("data"));
    }
    part.insert("data".into(), Value::Object(fields));
    Value::Object(part)
}

#[derive(Debug, Clone)]
struct CallShape {
    name_key: &'static str,
    args_key: &'static str,
    args_as_text: bool,
    id_key: &'static str,
    call: Declaration,
    result_key: &'static str,
    result_id_key: Option<&'static str>,
    result: Declaration,
    v1: bool,
}

fn call_shape() -> impl Strategy<Value = CallShape> {
    (
        (
            prop_oneof![
                Just("name"),
                Just("tool_name"),
                Just("toolName"),
                Just("function.name")
            ],
            prop_oneof![
                Just("args"),
                Just("arguments"),
                Just("input"),
                Just("parameters"),
                Just("function.arguments")
            ],
            any::<bool>(),
            prop_oneof![
                Just("id"),
                Just("tool_call_id"),
                Just("toolCallId"),
                Just("call_id")
            ],
            call_declaration(),
        ),
        (
            prop_oneof![
                Just("result"),
                Just("output"),
                Just("content"),
                Just("response")
            ],
            prop::option::of(prop_oneof![
                Just("tool_call_id"),
                Just("toolCallId"),
                Just("call_id"),
                Just("callId")
            ]),
            result_declaration(),
            any::<bool>(),
        ),
    )
        .prop_map(
            |(
                (name_key, args_key, args_as_text, id_key, call),
                (result_key, result_id_key, result, v1),
            )| {
                CallShape {
                    name_key,
                    args_key,
                    args_as_text,
                    id_key,
                    call,
                    result_key,
                    result_id_key,
                    result,
                    v1,
                }
            },
        )
}

/// Sets `key` (a dotted `function.x` nests under `function`).
fn set(fields: &mut Map<String, Value>, key: &str, value: Value) {
    match key.split_once('.') {
        Some((outer, inner)) => {
            let nested = fields.entry(outer).or_insert_with(|| json!({}));
            nested[inner] = value;
        }
        None => {
            fields.insert(key.to_owned(), value);
        }
    }
}

fn call_and_result(shape: &CallShape, name: &str, args: &Value, result: &str) -> (Value, Value) {
    let mut call = Map::new();
    set(&mut call, shape.name_key, json!(name));
    let args_value = if shape.args_as_text {
        json!(args.to_string())
    } else {
        args.clone()
    };
    set(&mut call, shape.args_key, args_value);
    set(&mut call, shape.id_key, json!("call-7"));
    let mut answer = Map::new();
    answer.insert(shape.result_key.to_owned(), json!(result));
    answer.insert("tool_name".to_owned(), json!(name));
    if let Some(key) = shape.result_id_key {
        answer.insert(key.to_owned(), json!("call-7"));
    }
    (
        data_part(call, &shape.call, shape.v1),
        data_part(answer, &shape.result, shape.v1),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: ProptestConfig::default().cases.max(512), ..ProptestConfig::default() })]

    /// Whatever keys a call and its result use, and however they declare
    /// themselves, the client sees the call by its name with its
    /// arguments, and the result under that call: never `unknown_tool`,
    /// never a second call made from the result.
    #[test]
    fn a_tool_call_keeps_its_name_arguments_and_result(
        shape in call_shape(),
        name in "[a-z][a-z_]{0,11}",
        city in "[A-Za-z ]{1,12}",
        result in "[a-zA-Z0-9 ]{1,16}",
        same_message in any::<bool>(),
    ) {
        let args = json!({"city": city});
        let (call, answer) = call_and_result(&shape, &name, &args, &result);
        let items = if same_message {
            vec![task("working"), status("m1", vec![call, answer], "working"), done()]
        } else {
            vec![task("working"), status("m1", vec![call], "working"),
                 status("m2", vec![answer], "working"), done()]
        };
        let events = convert(&items);
        check_sequence(&events).map_err(TestCaseError::fail)?;
        let starts = of_type(&events, "TOOL_CALL_START");
        prop_assert_eq!(starts.len(), 1, "{:?} {:#?}", shape, events);
        prop_assert_eq!(&starts[0]["toolCallName"], &json!(name));
        let id = starts[0]["toolCallId"].clone();
        let sent: Value = serde_json::from_str(&deltas(&events, "TOOL_CALL_ARGS")).unwrap();
        prop_assert_eq!(sent, args);
        let results = of_type(&events, "TOOL_CALL_RESULT");
        prop_assert_eq!(results.len(), 1);
        prop_assert_eq!(&results[0]["toolCallId"], &id);
        prop_assert_eq!(&results[0]["content"], &json!(result));
    }

    /// A part whose data only looks like a call (a name and arguments,
    /// no declaration) stays data: never a wrong call.
    #[test]
    fn an_undeclared_shape_stays_data(name in "[a-z]{1,8}", v1 in any::<bool>()) {
        let mut fields = Map::new();
        fields.insert("name".into(), json!(name));
        fields.insert("arguments".into(), json!({"x": 1}));
        let mut part = json!({"data": Value::Object(fields)});
        if !v1 {
            part["kind"] = json!("data");
        }
        let events = convert(&[task("working"), status("m1", vec![part], "working"), done()]);
        check_sequence(&events).map_err(TestCaseError::fail)?;
        prop_assert!(of_type(&events, "TOOL_CALL_START").is_empty());
    }
}

// ---------------------------------------------------------------------------
// Text streams by behaviour.

/// How the same text is sent.
#[derive(Debug, Clone, Copy)]
enum Delivery {
    /// Each chunk a status message with a new id.
    DeltasNewIds,
    /// Each chunk a status message under one id.
    DeltasOneId,
    /// Each event a status message under one id with the text so far.
    SnapshotsOneId,
    /// Each event a whole Task whose message keeps one id.
    TaskSnapshots,
    /// Message stream items under one id, each a chunk.
    MessageDeltasOneId,
    /// Message stream items under one id, each the text so far.
    MessageSnapshotsOneId,
    /// Artifact chunks appended to one artifact.
    ArtifactAppend,
    /// Artifact chunks each replacing the artifact with the text so far.
    ArtifactSnapshots,
}

fn delivery() -> impl Strategy<Value = Delivery> {
    prop_oneof![
        Just(Delivery::DeltasNewIds),
        Just(Delivery::DeltasOneId),
        Just(Delivery::SnapshotsOneId),
        Just(Delivery::TaskSnapshots),
        Just(Delivery::MessageDeltasOneId),
        Just(Delivery::MessageSnapshotsOneId),
        Just(Delivery::ArtifactAppend),
        Just(Delivery::ArtifactSnapshots),
    ]
}

/// How the stream ends.
#[derive(Debug, Clone, Copy)]
enum Closing {
    /// A completed status without a message.
    Bare,
    /// A completed status whose new message repeats the whole text.
    ResendInStatus,
    /// The same id (message or artifact) once more with the whole text.
    ResendSameId,
}

fn message_item(message_id: &str, text: &str) -> Value {
    rpc(
        json!({"kind": "message", "role": "agent", "messageId": message_id,
               "taskId": "t", "contextId": "c", "parts": [text_part(text)]}),
    )
}

/// Distinct words, so that no chunk is ever a repeat of another by chance.
fn words() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec("[a-z]{1,6}", 1..12).prop_map(|ws| {
        ws.into_iter()
            .enumerate()
            .map(|(i, w)| format!("{w}{i} "))
            .collect()
    })
}

fn stream_of(
    chunks: &[String],
    delivery: Delivery,
    empty_first: bool,
    closing: Closing,
) -> Vec<Value> {
    let whole: String = chunks.concat();
    let mut so_far = String::new();
    let mut items = vec![task("working")];
    if empty_first && matches!(delivery, Delivery::SnapshotsOneId | Delivery::TaskSnapshots) {
        items.push(match delivery {
            Delivery::TaskSnapshots => task_with_message("answer", "", "working"),
            _ => status("answer", vec![text_part("")], "working"),
        });
    }
    for (i, chunk) in chunks.iter().enumerate() {
        so_far.push_str(chunk);
        items.push(match delivery {
            Delivery::DeltasNewIds => status(&format!("m{i}"), vec![text_part(chunk)], "working"),
            Delivery::DeltasOneId => status("answer", vec![text_part(chunk)], "working"),
            Delivery::SnapshotsOneId => status("answer", vec![text_part(&so_far)], "working"),
            Delivery::TaskSnapshots => task_with_message("answer", &so_far, "working"),
            Delivery::MessageDeltasOneId => message_item("answer", chunk),
            Delivery::MessageSnapshotsOneId => message_item("answer", &so_far),
            Delivery::ArtifactAppend => artifact("a", chunk, i > 0, false),
            Delivery::ArtifactSnapshots => artifact("a", &so_far, false, false),
        });
    }
    match closing {
        Closing::Bare => {}
        Closing::ResendInStatus => {
            items.push(status("closing", vec![text_part(&whole)], "completed"));
            return items;
        }
        Closing::ResendSameId => items.push(match delivery {
            Delivery::DeltasNewIds => status(
                &format!("m{}", chunks.len() - 1),
                vec![text_part(&whole)],
                "working",
            ),
            Delivery::DeltasOneId | Delivery::SnapshotsOneId => {
                status("answer", vec![text_part(&whole)], "working")
            }
            Delivery::TaskSnapshots => task_with_message("answer", &whole, "working"),
            Delivery::MessageDeltasOneId | Delivery::MessageSnapshotsOneId => {
                message_item("answer", &whole)
            }
            Delivery::ArtifactAppend | Delivery::ArtifactSnapshots => {
                artifact("a", &whole, false, true)
            }
        }),
    }
    items.push(done());
    items
}

proptest! {
    #![proptest_config(ProptestConfig { cases: ProptestConfig::default().cases.max(512), ..ProptestConfig::default() })]

    /// Deltas or cumulative snapshots, under one id or many, in status
    /// messages, Task snapshots, message items or artifacts, with or
    /// without the whole text sent again at the end: the text shows once,
    /// in one message.
    #[test]
    fn the_same_text_shows_once_however_it_is_sent(
        chunks in words(),
        delivery in delivery(),
        empty_first in any::<bool>(),
        closing in prop_oneof![Just(Closing::Bare), Just(Closing::ResendInStatus), Just(Closing::ResendSameId)],
    ) {
        let whole: String = chunks.concat();
        // A message item's short text sent again may be a repeated token
        // (deltas lose nothing): a resend is recognised from 16 bytes.
        let item = matches!(delivery, Delivery::MessageDeltasOneId | Delivery::MessageSnapshotsOneId);
        prop_assume!(!(item && matches!(closing, Closing::ResendSameId) && whole.len() < 16));
        let events = convert(&stream_of(&chunks, delivery, empty_first, closing));
        check_sequence(&events).map_err(TestCaseError::fail)?;
        prop_assert_eq!(deltas(&events, "TEXT_MESSAGE_CONTENT"), whole, "{:?} {:?}", delivery, closing);
        prop_assert_eq!(of_type(&events, "TEXT_MESSAGE_START").len(), 1, "{:?} {:#?}", delivery, events);
    }

    /// A thought streamed in chunks (flagged in metadata, or as reasoning
    /// data parts), a call and its result, the answer; then a closing
    /// message that resends all of it: each shows once.
    #[test]
    fn a_resend_of_any_block_kind_adds_nothing(
        thought in words(),
        answer in words(),
        as_data in any::<bool>(),
        flag in prop_oneof![Just("thought"), Just("thinking"), Just("reasoning"), Just("kagent_thought")],
    ) {
        let thinking = |text: &str| if as_data {
            json!({"kind": "data", "data": {"type": "reasoning", "text": text}})
        } else {
            json!({"kind": "text", "text": text, "metadata": {flag: true}})
        };
        let call = json!({"kind": "data", "data": {"type": "tool_call", "id": "c1", "name": "get_weather", "arguments": {"city": "Paris"}}});
        let result = json!({"kind": "data", "data": {"type": "tool_result", "tool_call_id": "c1", "output": "21C"}});
        let mut items = vec![task("working")];
        for (i, chunk) in thought.iter().enumerate() {
            items.push(status(&format!("t{i}"), vec![thinking(chunk)], "working"));
        }
        items.push(status("call", vec![call.clone()], "working"));
        items.push(status("result", vec![result.clone()], "working"));
        for (i, chunk) in answer.iter().enumerate() {
            items.push(status(&format!("a{i}"), vec![text_part(chunk)], "working"));
        }
        let (thought, answer) = (thought.concat(), answer.concat());
        items.push(status("closing", vec![thinking(&thought), call, result, text_part(&answer)], "completed"));
        let events = convert(&items);
        check_sequence(&events).map_err(TestCaseError::fail)?;
        prop_assert_eq!(deltas(&events, "REASONING_MESSAGE_CONTENT"), thought);
        prop_assert_eq!(deltas(&events, "TEXT_MESSAGE_CONTENT"), answer);
        prop_assert_eq!(of_type(&events, "TOOL_CALL_START").len(), 1);
        prop_assert_eq!(of_type(&events, "TOOL_CALL_RESULT").len(), 1);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: ProptestConfig::default().cases.max(512), ..ProptestConfig::default() })]

    /// Deltas of short tokens under one message id (a tokenizer that
    /// splits digits sends "2", "2"; "1", "1."): each may equal or start
    /// with the text so far, and none is lost.
    #[test]
    fn short_token_deltas_under_one_id_lose_nothing(
        tokens in prop::collection::vec(prop_oneof![
            Just("1"), Just("2"), Just("."), Just("ha"), Just(" "), Just("1."), Just("°C")
        ], 1..24),
    ) {
        let mut items = vec![task("working")];
        items.extend(tokens.iter().map(|t| message_item("answer", t)));
        items.push(done());
        let events = convert(&items);
        check_sequence(&events).map_err(TestCaseError::fail)?;
        prop_assert_eq!(deltas(&events, "TEXT_MESSAGE_CONTENT"), tokens.concat());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: ProptestConfig::default().cases.max(512), ..ProptestConfig::default() })]

    /// ADK and kagent stream a turn's thought and answer in partial
    /// events, then send the whole turn again in one working event (a new
    /// message id, the whole thought and the whole answer together): it
    /// adds nothing.
    #[test]
    fn a_turn_resent_whole_in_a_working_event_adds_nothing(
        thought in words(),
        answer in words(),
        flag in prop_oneof![Just("thought"), Just("adk_thought"), Just("kagent_thought")],
    ) {
        let thinking = |text: &str| json!({"kind": "text", "text": text, "metadata": {flag: true}});
        let mut items = vec![task("working")];
        for (i, chunk) in thought.iter().enumerate() {
            items.push(status(&format!("t{i}"), vec![thinking(chunk)], "working"));
        }
        for (i, chunk) in answer.iter().enumerate() {
            items.push(status(&format!("a{i}"), vec![text_part(chunk)], "working"));
        }
        let (thought, answer) = (thought.concat(), answer.concat());
        prop_assume!(thought.len() >= 16);
        items.push(status("whole", vec![thinking(&thought), text_part(&answer)], "working"));
        items.push(done());
        let events = convert(&items);
        check_sequence(&events).map_err(TestCaseError::fail)?;
        prop_assert_eq!(deltas(&events, "REASONING_MESSAGE_CONTENT"), thought);
        prop_assert_eq!(deltas(&events, "TEXT_MESSAGE_CONTENT"), answer);
    }

    /// Message items under one id, each the text so far, whatever the
    /// length of the first: the text shows once (a first snapshot of a
    /// byte or two may be taken for a delta once; never more).
    #[test]
    fn cumulative_message_items_recover_from_a_short_first_snapshot(
        first in "[A-Z][a-z]?",
        rest in words(),
    ) {
        let mut so_far = first.clone();
        let mut items = vec![task("working"), message_item("answer", &so_far)];
        for chunk in &rest {
            so_far.push_str(chunk);
            items.push(message_item("answer", &so_far));
        }
        items.push(done());
        let events = convert(&items);
        check_sequence(&events).map_err(TestCaseError::fail)?;
        let shown = deltas(&events, "TEXT_MESSAGE_CONTENT");
        // At worst the first snapshot shows twice, before the stream is
        // known for one.
        prop_assert!(shown == so_far || shown == format!("{first}{so_far}"), "{:?} vs {:?}", shown, so_far);
    }
}
