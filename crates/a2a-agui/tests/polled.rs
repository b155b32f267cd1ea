//! A task read again and again (`TaskPoll`) converts as its stream would:
//! every status message and artifact part shown once, in either dialect,
//! however often or seldom the task is read, and nothing of an earlier
//! turn shown again.
#![allow(clippy::expect_used, clippy::unwrap_used)] // test code: a panic is the failure report

mod common;

use a2a_agui::{Converter, Options, Polled, TaskPoll};
use common::{check_sequence, convert_items, finished};
use proptest::prelude::*;
use serde_json::{Value, json};

/// What the agent did, step by step: a status message, or an artifact's
/// next text part.
#[derive(Debug, Clone)]
enum Step {
    Said(String),
    Part(String),
}

/// The task as a store holds it after `steps`, as a2a-sdk keeps it: the
/// status message of the last status, the earlier ones moved to the
/// history after the user's message, artifact parts appended. `v03`
/// spells it as 0.3's JSON-RPC does, else as 1.0's.
fn stored(steps: &[Step], state: &str, v03: bool) -> Value {
    let role = if v03 { "agent" } else { "ROLE_AGENT" };
    let text = |t: &str| match v03 {
        true => json!({ "kind": "text", "text": t }),
        false => json!({ "text": t }),
    };
    let user = match v03 {
        true => {
            json!({ "kind": "message", "role": "user", "messageId": "sent", "parts": [text("hi")] })
        }
        false => json!({ "role": "ROLE_USER", "messageId": "sent", "parts": [text("hi")] }),
    };
    let mut history = vec![user];
    let mut status_message = None;
    let mut parts = Vec::new();
    for (n, step) in steps.iter().enumerate() {
        match step {
            Step::Said(said) => {
                let message =
                    json!({ "role": role, "messageId": format!("m{n}"), "parts": [text(said)] });
                if let Some(earlier) = status_message.replace(message) {
                    history.push(earlier);
                }
            }
            Step::Part(part) => parts.push(text(part)),
        }
    }
    let state = match v03 {
        true => state.to_owned(),
        false => format!("TASK_STATE_{}", state.to_uppercase().replace('-', "_")),
    };
    let mut status = json!({ "state": state });
    if let Some(message) = status_message {
        status["message"] = message;
    }
    let mut task = json!({ "id": "t1", "contextId": "c1", "status": status, "history": history });
    if !parts.is_empty() {
        task["artifacts"] = json!([{ "artifactId": "answer", "parts": parts }]);
    }
    if v03 {
        task["kind"] = json!("task");
    }
    task
}

/// The AG-UI events of a run that reads `reads` (JSON-RPC answers).
fn convert(reads: &[Value], mut poll: TaskPoll) -> Vec<Value> {
    let mut items = Vec::new();
    for read in reads {
        let Polled::Task { items: news, .. } = poll.read(read) else {
            panic!("not a task: {read}");
        };
        items.extend(news);
    }
    convert_items(&items)
}

/// The same steps as the agent's stream: the task, a status per
/// message, an artifact update per part, the end.
fn streamed(steps: &[Step], v03: bool) -> Vec<Value> {
    let text = |t: &str| match v03 {
        true => json!({ "kind": "text", "text": t }),
        false => json!({ "text": t }),
    };
    let wrap = |kind: &str, key: &str, mut item: Value| match v03 {
        true => {
            item["kind"] = json!(kind);
            item
        }
        false => json!({ key: item }),
    };
    let state = |s: &str| match v03 {
        true => s.to_owned(),
        false => format!("TASK_STATE_{}", s.to_uppercase()),
    };
    let ids = json!({ "taskId": "t1", "contextId": "c1" });
    let with_ids = |mut item: Value| {
        item["taskId"] = ids["taskId"].clone();
        item["contextId"] = ids["contextId"].clone();
        item
    };
    let mut items = vec![wrap(
        "task",
        "task",
        json!({ "id": "t1", "contextId": "c1", "status": { "state": state("submitted") } }),
    )];
    let mut parts = 0;
    for (n, step) in steps.iter().enumerate() {
        items.push(match step {
            Step::Said(said) => {
                let role = if v03 { "agent" } else { "ROLE_AGENT" };
                let message =
                    json!({ "role": role, "messageId": format!("m{n}"), "parts": [text(said)] });
                let status = json!({ "status": { "state": state("working"), "message": message } });
                wrap("status-update", "statusUpdate", with_ids(status))
            }
            Step::Part(part) => {
                parts += 1;
                let artifact = json!({ "append": parts > 1,
                    "artifact": { "artifactId": "answer", "parts": [text(part)] } });
                wrap("artifact-update", "artifactUpdate", with_ids(artifact))
            }
        });
    }
    let end = json!({ "final": true, "status": { "state": state("completed") } });
    items.push(wrap("status-update", "statusUpdate", with_ids(end)));
    convert_items(&items)
}

/// All the text shown, of status messages (capitals) and of the artifact
/// (small letters) apart: what a run shows, whatever the grouping of its
/// messages.
fn shown(events: &[Value]) -> (String, String) {
    let mut all = String::new();
    for event in events {
        if event["type"] == "TEXT_MESSAGE_CONTENT" {
            all.push_str(event["delta"].as_str().unwrap());
        }
    }
    let status = all.chars().filter(|c| !c.is_ascii_lowercase()).collect();
    let artifact = all.chars().filter(|c| c.is_ascii_lowercase()).collect();
    (status, artifact)
}

fn answer(result: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": "r", "result": result })
}

fn script() -> Vec<Step> {
    vec![
        Step::Said("STEP ONE. ".into()),
        Step::Said("STEP TWO. ".into()),
        Step::Part("allthree".into()),
        Step::Said("STEP THREE.".into()),
        Step::Part("stepsdone".into()),
    ]
}

#[test]
fn every_status_message_and_part_shows_once() {
    for v03 in [false, true] {
        let steps = script();
        // The send's answer (1.0 wraps the task), then reads at every
        // step, one of them twice (nothing new), then the end.
        let sent = match v03 {
            true => answer(stored(&[], "submitted", v03)),
            false => answer(json!({ "task": stored(&[], "submitted", v03) })),
        };
        let mut reads = vec![sent];
        for n in 1..=steps.len() {
            reads.push(answer(stored(&steps[..n], "working", v03)));
        }
        reads.push(reads.last().unwrap().clone());
        reads.push(answer(stored(&steps, "completed", v03)));
        let events = convert(&reads, TaskPoll::new(Some("sent".into())));
        check_sequence(&events).unwrap();
        assert_eq!(shown(&events), shown(&streamed(&steps, v03)));
        assert_eq!(
            shown(&events),
            (
                "STEP ONE. STEP TWO. STEP THREE.".into(),
                "allthreestepsdone".into()
            )
        );
        assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED");
    }
}

#[test]
fn reads_say_when_the_task_is_done() {
    let mut poll = TaskPoll::new(Some("sent".into()));
    let working = poll.read(&answer(stored(&script()[..1], "working", false)));
    assert!(matches!(working, Polled::Task { done: false, ref task_id, .. } if task_id == "t1"));
    let waiting = poll.read(&answer(stored(&script()[..2], "input-required", false)));
    assert!(matches!(waiting, Polled::Task { done: true, .. }));
    // An unchanged task adds nothing.
    let again = poll.read(&answer(stored(&script()[..2], "input-required", false)));
    assert!(matches!(again, Polled::Task { ref items, .. } if items.is_empty()));
    let error = json!({ "jsonrpc": "2.0", "id": "r", "error": { "code": -32001, "message": "Task not found" } });
    assert_eq!(poll.read(&error), Polled::Other);
    let message =
        answer(json!({ "kind": "message", "role": "agent", "messageId": "x", "parts": [] }));
    assert_eq!(poll.read(&message), Polled::Other);
}

#[test]
fn a_continuation_shows_nothing_of_the_earlier_turns() {
    let earlier = vec![
        Step::Part("weather".into()),
        Step::Said("WHICH CITY?".into()),
    ];
    let before = answer(stored(&earlier, "input-required", false));
    let mut poll = TaskPoll::new(Some("sent".into()));
    poll.baseline(&before);
    let mut now = earlier.clone();
    now.push(Step::Part("sunny".into()));
    let events = convert(&[answer(stored(&now, "completed", false))], poll);
    check_sequence(&events).unwrap();
    assert_eq!(shown(&events), (String::new(), "sunny".to_owned()));
}

#[test]
fn a_run_taken_over_reads_on_without_repeating() {
    // The first replica converted the reads up to step 3; the second
    // rebuilt its converter from them and reads again, from scratch.
    let steps = script();
    let mut converter = Converter::with_sequential_ids(Options::default());
    let mut out = Vec::new();
    let mut first = TaskPoll::new(Some("sent".into()));
    for n in [1, 3] {
        let read = answer(stored(&steps[..n], "working", false));
        let Polled::Task { items, .. } = first.read(&read) else {
            unreachable!()
        };
        items
            .iter()
            .for_each(|item| converter.push_value(item, &mut out));
    }
    let mut second = TaskPoll::reattached(first.memo(), converter.artifacts_shown());
    for read in [
        stored(&steps[..4], "working", false),
        stored(&steps, "completed", false),
    ] {
        let Polled::Task { items, .. } = second.read(&answer(read)) else {
            unreachable!()
        };
        items
            .iter()
            .for_each(|item| converter.push_value(item, &mut out));
    }
    let events = finished(converter, out);
    check_sequence(&events).unwrap();
    assert_eq!(shown(&events), shown(&streamed(&steps, false)));
}

#[test]
fn a_continuation_taken_over_shows_nothing_of_the_earlier_turns_either() {
    let earlier = vec![
        Step::Part("weather".into()),
        Step::Said("WHICH CITY?".into()),
    ];
    // The message the gateway sent comes after the earlier turn's in the
    // history, as a store appends it.
    let continued = |steps: &[Step], state: &str| {
        let mut task = stored(steps, state, false);
        let history = task["history"].as_array_mut().unwrap();
        let sent = history.remove(0);
        let at = history
            .iter()
            .position(|m| m["parts"][0]["text"] == "WHICH CITY?")
            .map_or(0, |at| at + 1);
        history.insert(at, sent);
        answer(task)
    };
    let mut converter = Converter::with_sequential_ids(Options::default());
    let mut out = Vec::new();
    let mut read = |poll: &mut TaskPoll, converter: &mut Converter<_>, answer: Value| {
        let Polled::Task { items, .. } = poll.read(&answer) else {
            unreachable!()
        };
        items
            .iter()
            .for_each(|item| converter.push_value(item, &mut out));
    };
    let mut first = TaskPoll::new(Some("sent".into()));
    first.baseline(&answer(stored(&earlier, "input-required", false)));
    let mut now = earlier.clone();
    now.push(Step::Part("sunny".into()));
    read(&mut first, &mut converter, continued(&now, "working"));
    // The replica that takes over knows the run's memo and what its
    // rebuilt converter showed, not the first replica's reads.
    let mut second = TaskPoll::reattached(first.memo(), converter.artifacts_shown());
    now.push(Step::Said("LOOKING. ".into()));
    read(&mut second, &mut converter, continued(&now, "working"));
    now.push(Step::Part("today".into()));
    read(&mut second, &mut converter, continued(&now, "completed"));
    let events = finished(converter, out);
    check_sequence(&events).unwrap();
    assert_eq!(
        shown(&events),
        ("LOOKING. ".to_owned(), "sunnytoday".to_owned())
    );
}

/// Status messages in capitals, artifact text in small letters: told
/// apart in the output by their case.
fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        "[A-Z]{1,8}".prop_map(Step::Said),
        "[a-z]{1,8}".prop_map(Step::Part),
    ]
}

proptest! {
    /// However seldom the task is read (at the end at least), a polled
    /// run shows what the agent's stream would have: every status message
    /// and the artifact's whole text, once.
    #[test]
    fn any_reading_shows_what_the_stream_shows(
        steps in prop::collection::vec(step(), 1..12),
        reads in prop::collection::vec(any::<bool>(), 12),
        v03 in any::<bool>(),
    ) {
        // Each status message its own words, from its first letter on: a
        // stream drops a status that repeats the one before word for word,
        // and reads a status that extends the one before as a snapshot of
        // it, which a read, not knowing what came between, cannot match.
        let steps: Vec<Step> = steps
            .into_iter()
            .enumerate()
            .map(|(n, step)| match step {
                Step::Said(said) => Step::Said(format!("{}{said}", char::from(b'A' + n as u8))),
                part => part,
            })
            .collect();
        let mut answers = Vec::new();
        for n in 1..=steps.len() {
            if reads[n - 1] {
                answers.push(answer(stored(&steps[..n], "working", v03)));
            }
        }
        answers.push(answer(stored(&steps, "completed", v03)));
        let events = convert(&answers, TaskPoll::new(Some("sent".into())));
        prop_assert!(check_sequence(&events).is_ok(), "{:?}", check_sequence(&events));
        prop_assert_eq!(shown(&events), shown(&streamed(&steps, v03)));
    }
}

/// Anything an agent may answer a read with: tasks whose fields are of
/// any shape, messages, errors, junk.
fn hostile_answer() -> impl Strategy<Value = Value> {
    let scalar = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        "[a-zA-Z_ -]{0,12}".prop_map(Value::from),
    ];
    let leaf = scalar.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map(
                prop_oneof![
                    Just("id".to_owned()),
                    Just("messageId".to_owned()),
                    Just("role".to_owned()),
                    Just("parts".to_owned()),
                    Just("text".to_owned()),
                    Just("state".to_owned()),
                    Just("artifactId".to_owned()),
                    "[a-z]{1,6}",
                ],
                inner,
                0..4
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    });
    let state = prop_oneof![
        Just("working"),
        Just("TASK_STATE_WORKING"),
        Just("completed"),
        Just("input-required"),
        Just("failed"),
        Just("bogus"),
    ];
    let task = (
        state,
        prop::collection::vec(leaf.clone(), 0..4),
        prop::collection::vec(leaf.clone(), 0..3),
        leaf.clone(),
    )
        .prop_map(|(state, history, artifacts, message)| {
            json!({ "id": "t1", "contextId": "c1", "kind": "task",
                "status": { "state": state, "message": message },
                "history": history, "artifacts": artifacts })
        });
    prop_oneof![
        6 => task.prop_map(answer),
        1 => leaf.clone().prop_map(answer),
        1 => leaf,
        1 => Just(json!({ "jsonrpc": "2.0", "id": 1, "error": { "code": -32001, "message": "gone" } })),
    ]
}

proptest! {
    /// Whatever the reads answer, the run is a valid AG-UI run, and a read
    /// hands on no more items than the task holds messages, plus two.
    #[test]
    fn hostile_reads_make_a_valid_run(answers in prop::collection::vec(hostile_answer(), 1..8)) {
        let mut poll = TaskPoll::new(Some("sent".into()));
        let mut items = Vec::new();
        for answer in &answers {
            match poll.read(answer) {
                Polled::Task { items: news, .. } => {
                    let held = answer.pointer("/result/history").and_then(Value::as_array).map_or(0, Vec::len);
                    prop_assert!(news.len() <= held + 3, "{} items of {answer}", news.len());
                    items.extend(news);
                }
                Polled::Other => items.push(answer.clone()),
            }
        }
        let events = convert_items(&items);
        prop_assert!(check_sequence(&events).is_ok(), "{:?}", check_sequence(&events));
    }
}
