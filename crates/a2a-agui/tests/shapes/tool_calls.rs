//! Tool calls by key family: a call and its result, in random key
//! families, spellings, declarations and dialects, keep the call's name,
//! arguments and result; an undeclared shape stays data.

use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::*;

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
