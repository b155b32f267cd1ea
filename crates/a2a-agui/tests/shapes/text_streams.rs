//! Text streams by behaviour: the same text as deltas, as cumulative
//! snapshots, under one id or many, shows once; a resend of any block kind
//! adds nothing.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;

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
