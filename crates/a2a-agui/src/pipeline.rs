//! Bytes in, bytes out: the SSE parser, the converter and an encoder wired
//! together, still without I/O. The gateway feeds it upstream chunks as they
//! arrive; `convert_recording` feeds it a whole recorded body.

use serde_json::Value;

use crate::codes::ErrorCode;
use crate::convert::{Converter, Options, StreamEnd};
use crate::encode::{Encoder, OutputFormat};
use crate::event::Event;
use crate::ids::{IdSource, SequentialIds};
use crate::sse::{DEFAULT_MAX_EVENT_BYTES, SseError, SseParser};

/// One upstream body converted as it arrives: SSE parser, [`Converter`]
/// and encoder.
pub struct StreamConverter<I = SequentialIds> {
    converter: Converter<I>,
    parser: SseParser,
    encoder: Encoder,
    events: Vec<Event>,
    ids: Option<EventIds>,
    /// With `with_tap`: the upstream events of the last call, each with
    /// the index of the first AG-UI event it produced.
    taps: Option<Vec<Tap>>,
}

/// One upstream event shown beside what it became (the inspector).
#[derive(Debug)]
struct Tap {
    /// Index into `events` of the first event this input produced.
    at: usize,
    data: Vec<u8>,
}

/// The SSE event name of a tapped upstream event.
pub const TAP_EVENT: &str = "a2a";

/// SSE `id:` lines for every frame: `<run key>.<n>`, `n` counting from 1.
/// A client that lost the stream names the last id it got.
#[derive(Debug)]
struct EventIds {
    run_key: String,
    last: u64,
    /// Frames of one event before their ids (Hector writes several).
    scratch: Vec<u8>,
}

impl EventIds {
    fn write_id(&mut self, out: &mut Vec<u8>) {
        self.last += 1;
        out.extend_from_slice(b"id: ");
        out.extend_from_slice(self.run_key.as_bytes());
        out.push(b'.');
        crate::encode::push_decimal(out, self.last);
        out.push(b'\n');
    }
}

impl<I: IdSource> StreamConverter<I> {
    /// A converter for one run, writing `format`, refusing upstream events
    /// larger than `max_event_bytes`.
    pub fn new(options: Options, ids: I, format: OutputFormat, max_event_bytes: usize) -> Self {
        StreamConverter {
            converter: Converter::new(options, ids),
            parser: SseParser::new(max_event_bytes),
            encoder: Encoder::new(format),
            events: Vec::new(),
            ids: None,
            taps: None,
        }
    }

    /// Every upstream event is written too, as an `event: a2a` frame (no
    /// id) before the AG-UI frames it produced: the inspector shows both
    /// sides of a run. For readers that dispatch on the event name only:
    /// `@ag-ui/client` reads every `data:` line as an AG-UI event.
    pub fn with_tap(mut self) -> Self {
        self.taps = Some(Vec::new());
        self
    }

    /// Every frame written from now on carries `id: <run_key>.<n>`. The
    /// key must be a token (no white space, no `.`): it names the run.
    pub fn with_event_ids(mut self, run_key: impl Into<String>) -> Self {
        self.ids = Some(EventIds {
            run_key: run_key.into(),
            last: 0,
            scratch: Vec::new(),
        });
        self
    }

    /// Frames are numbered on after `last` (at least): a run continued by
    /// another process numbers on from what was already sent.
    pub fn number_events_after(&mut self, last: u64) {
        if let Some(ids) = &mut self.ids {
            ids.last = ids.last.max(last);
        }
    }

    /// The number of the last frame written with an id (0 before any).
    pub fn last_event_number(&self) -> u64 {
        self.ids.as_ref().map_or(0, |ids| ids.last)
    }

    /// The upstream stream broke and the caller re-attached to the task:
    /// a half-read event of the old stream is dropped, and what the new
    /// one says is reconciled with what was shown (`Converter::reattach`).
    pub fn reattach(&mut self) {
        self.parser.reset();
        self.converter.reattach();
    }

    /// The state machine (for the run's ids).
    pub fn converter(&self) -> &Converter<I> {
        &self.converter
    }

    /// True once the terminal event was written.
    pub fn is_finished(&self) -> bool {
        self.converter.is_finished()
    }

    /// The events produced by the last call, already encoded into `out`.
    pub fn last_events(&self) -> &[Event] {
        &self.events
    }

    /// Lets go of the last call's events once they were read: a stream
    /// held quiet keeps neither their text nor their room (an `Event` is
    /// 384 bytes: room for four was 1.5 KiB with every stream; a step's
    /// one allocation costs less than keeping it).
    pub fn release_events(&mut self) {
        self.events = Vec::new();
    }

    /// A chunk of an upstream `text/event-stream` body.
    pub fn feed_sse(
        &mut self,
        chunk: &[u8],
        now_ms: Option<u64>,
        out: &mut Vec<u8>,
    ) -> Result<(), serde_json::Error> {
        self.events.clear();
        let converter = &mut self.converter;
        let events = &mut self.events;
        let taps = &mut self.taps;
        let parsed = self.parser.feed(chunk, |e| {
            tap(taps, events.len(), e.data);
            converter.push_sse(e.name, e.data, events);
        });
        self.fail_on_oversized(parsed);
        self.encode(now_ms, out)
    }

    /// A whole JSON body: one document (a non-streaming result, an error
    /// body) or several (JSON Lines, or a JSON text sequence: RFC 7464's
    /// record separator before or after each, as Mastra streams).
    pub fn feed_json(
        &mut self,
        body: &[u8],
        now_ms: Option<u64>,
        out: &mut Vec<u8>,
    ) -> Result<(), serde_json::Error> {
        self.events.clear();
        for record in body.split(|b| *b == RECORD_SEPARATOR) {
            if !self.feed_documents(record) {
                break;
            }
        }
        self.encode(now_ms, out)
    }

    /// The JSON documents of one record, converted; false once one is not
    /// JSON (the run has then failed).
    fn feed_documents(&mut self, record: &[u8]) -> bool {
        for document in serde_json::Deserializer::from_slice(record).into_iter::<Value>() {
            match document {
                Ok(value) => {
                    if self.taps.is_some() {
                        let data = serde_json::to_vec(&value).unwrap_or_default();
                        tap(&mut self.taps, self.events.len(), &data);
                    }
                    self.converter.push_value(&value, &mut self.events);
                }
                Err(err) => {
                    self.converter.finish(
                        StreamEnd::Failed {
                            code: ErrorCode::MalformedEvent,
                            message: format!("upstream sent a body that is not valid JSON: {err}"),
                        },
                        &mut self.events,
                    );
                    return false;
                }
            }
        }
        true
    }

    /// The input has ended (or the caller gave up on it). Always leaves the
    /// output with its terminal event.
    pub fn finish(
        &mut self,
        end: StreamEnd,
        now_ms: Option<u64>,
        out: &mut Vec<u8>,
    ) -> Result<(), serde_json::Error> {
        self.events.clear();
        if end == StreamEnd::Eof {
            let converter = &mut self.converter;
            let events = &mut self.events;
            let taps = &mut self.taps;
            let parsed = self.parser.finish(|e| {
                tap(taps, events.len(), e.data);
                converter.push_sse(e.name, e.data, events);
            });
            self.fail_on_oversized(parsed);
        }
        self.converter.finish(end, &mut self.events);
        self.encode(now_ms, out)
    }

    /// An event over the parser's limit ends the run.
    fn fail_on_oversized(&mut self, parsed: Result<(), SseError>) {
        if let Err(err) = parsed {
            let end = StreamEnd::Failed {
                code: ErrorCode::UpstreamEventTooLarge,
                message: err.to_string(),
            };
            self.converter.finish(end, &mut self.events);
        }
    }

    fn encode(&mut self, now_ms: Option<u64>, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        let taps = self.taps.as_mut().map(std::mem::take).unwrap_or_default();
        let mut pending = taps.iter().peekable();
        for (index, event) in self.events.iter().enumerate() {
            while let Some(tapped) = pending.next_if(|t| t.at <= index) {
                write_tap(&tapped.data, out);
            }
            let Some(ids) = &mut self.ids else {
                self.encoder.encode(event, now_ms, out)?;
                continue;
            };
            if matches!(self.encoder, Encoder::Agui) {
                // One frame per event: its id first, no copy.
                ids.write_id(out);
                self.encoder.encode(event, now_ms, out)?;
                continue;
            }
            // Hector writes zero, one or several frames per event; each
            // gets its own id. Frames end with a blank line and hold none
            // (compact JSON, names without line breaks).
            ids.scratch.clear();
            self.encoder.encode(event, now_ms, &mut ids.scratch)?;
            let scratch = std::mem::take(&mut ids.scratch);
            for frame in split_frames(&scratch) {
                ids.write_id(out);
                out.extend_from_slice(frame);
            }
            ids.scratch = scratch;
        }
        // Upstream events that produced nothing are shown too.
        for tapped in pending {
            write_tap(&tapped.data, out);
        }
        if let Some(kept) = &mut self.taps {
            // The allocation is reused by the next call.
            *kept = taps;
            kept.clear();
        }
        Ok(())
    }
}

/// Keeps an upstream event for the tap, when it is on.
fn tap(taps: &mut Option<Vec<Tap>>, at: usize, data: &[u8]) {
    if let Some(taps) = taps {
        taps.push(Tap {
            at,
            data: data.to_vec(),
        });
    }
}

/// `event: a2a` and the upstream data, one `data:` line per line (the
/// parser split lines at CR, LF or CRLF and joined them with LF).
fn write_tap(data: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(b"event: ");
    out.extend_from_slice(TAP_EVENT.as_bytes());
    out.push(b'\n');
    for line in data.split(|b| *b == b'\n') {
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(line);
        out.push(b'\n');
    }
    out.push(b'\n');
}

/// Converts a recorded upstream body (an SSE capture, JSON Lines, or one
/// JSON document) into the AG-UI SSE body the gateway would have sent.
/// Deterministic: ids come from [`SequentialIds`], no timestamps.
pub fn convert_recording(
    input: &[u8],
    options: Options,
    format: OutputFormat,
) -> Result<Vec<u8>, serde_json::Error> {
    let mut stream = StreamConverter::new(
        options,
        SequentialIds::default(),
        format,
        DEFAULT_MAX_EVENT_BYTES,
    );
    let mut out = Vec::new();
    if looks_like_sse(input) {
        stream.feed_sse(input, None, &mut out)?;
    } else {
        stream.feed_json(input, None, &mut out)?;
    }
    stream.finish(StreamEnd::Eof, None, &mut out)?;
    Ok(out)
}

/// RFC 7464's record separator (JSON text sequences).
const RECORD_SEPARATOR: u8 = 0x1e;

/// An SSE body starts (after a BOM and blank lines) with a field or comment;
/// a JSON body starts with `{` or `[`.
pub fn looks_like_sse(input: &[u8]) -> bool {
    let input = input.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(input);
    match input.iter().position(|b| !b.is_ascii_whitespace()) {
        // A JSON text sequence (RFC 7464) opens with a record separator.
        Some(start) => !matches!(input[start], b'{' | b'[' | RECORD_SEPARATOR),
        None => false,
    }
}

/// Encoded SSE frames, each with the blank line that ends it.
fn split_frames(mut rest: &[u8]) -> impl Iterator<Item = &[u8]> {
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let end = rest
            .windows(2)
            .position(|w| w == b"\n\n")
            .map_or(rest.len(), |at| at + 2);
        let (frame, tail) = rest.split_at(end);
        rest = tail;
        Some(frame)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const BODY: &str = concat!(
        "data: {\"kind\":\"task\",\"id\":\"t1\",\"contextId\":\"c1\",\"status\":{\"state\":\"working\"}}\n\n",
        "data: {\"kind\":\"artifact-update\",\"taskId\":\"t1\",\"contextId\":\"c1\",\"lastChunk\":true,",
        "\"artifact\":{\"artifactId\":\"a\",\"parts\":[{\"kind\":\"text\",\"text\":\"hi\"}]}}\n\n",
        "data: {\"kind\":\"status-update\",\"taskId\":\"t1\",\"contextId\":\"c1\",\"final\":true,\"status\":{\"state\":\"completed\"}}\n\n",
    );

    /// Every frame of a converted body, with its id line.
    fn frames(format: OutputFormat) -> Vec<String> {
        let mut stream = StreamConverter::new(
            Options::default(),
            SequentialIds::default(),
            format,
            DEFAULT_MAX_EVENT_BYTES,
        )
        .with_event_ids("k7");
        let mut out = Vec::new();
        stream.feed_sse(BODY.as_bytes(), Some(1), &mut out).unwrap();
        stream.finish(StreamEnd::Eof, Some(2), &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let frames: Vec<String> = text.split_terminator("\n\n").map(str::to_owned).collect();
        assert_eq!(stream.last_event_number(), frames.len() as u64);
        frames
    }

    #[test]
    fn every_frame_carries_the_next_id_in_both_formats() {
        for format in [OutputFormat::Agui, OutputFormat::Hector] {
            let frames = frames(format);
            assert!(frames.len() > 3, "{format:?}: {frames:?}");
            for (n, frame) in frames.iter().enumerate() {
                let first = frame.lines().next().unwrap();
                assert_eq!(first, format!("id: k7.{}", n + 1), "{format:?}: {frame}");
                assert_eq!(frame.lines().filter(|l| l.starts_with("id:")).count(), 1);
                assert!(frame.lines().any(|l| l.starts_with("data: ")), "{frame}");
            }
        }
    }

    #[test]
    fn without_a_run_key_frames_carry_no_ids() {
        let out =
            convert_recording(BODY.as_bytes(), Options::default(), OutputFormat::Agui).unwrap();
        assert!(!String::from_utf8(out).unwrap().contains("id:"));
    }

    /// The inspector's tap: each upstream event, as sent, right before
    /// the AG-UI frames it produced; one that produced nothing still shows;
    /// the AG-UI frames are exactly those of an untapped run.
    #[test]
    fn a_tapped_stream_shows_each_upstream_event_before_what_it_became() {
        let split = |tapped: bool| {
            let mut stream = StreamConverter::new(
                Options::default(),
                SequentialIds::default(),
                OutputFormat::Agui,
                DEFAULT_MAX_EVENT_BYTES,
            )
            .with_event_ids("k7");
            if tapped {
                stream = stream.with_tap();
            }
            let mut out = Vec::new();
            // The first event cut in two, then a comment and a multi-line
            // event that produces nothing, then the rest.
            let first = BODY.find("\n\n").unwrap() + 2;
            let (head, tail) = BODY.split_at(first);
            stream
                .feed_sse(&head.as_bytes()[..40], Some(1), &mut out)
                .unwrap();
            stream
                .feed_sse(&head.as_bytes()[40..], Some(1), &mut out)
                .unwrap();
            stream
                .feed_sse(b": ping\n\ndata: {\"x\":\ndata: 1}\n\n", Some(1), &mut out)
                .unwrap();
            stream.feed_sse(tail.as_bytes(), Some(1), &mut out).unwrap();
            stream.finish(StreamEnd::Eof, Some(2), &mut out).unwrap();
            String::from_utf8(out).unwrap()
        };
        let plain = split(false);
        let tapped = split(true);
        let frames: Vec<&str> = tapped.split_terminator("\n\n").collect();
        let upstream: Vec<&str> = frames
            .iter()
            .copied()
            .filter(|f| f.starts_with("event: a2a\n"))
            .collect();
        assert_eq!(upstream.len(), 4, "{tapped}");
        assert!(upstream[0].contains("\"kind\":\"task\""), "{tapped}");
        assert_eq!(upstream[1], "event: a2a\ndata: {\"x\":\ndata: 1}");
        assert!(upstream.iter().all(|f| !f.contains("id:")));
        // The task's frame comes first, then RUN_STARTED it produced.
        assert!(frames[0].starts_with("event: a2a\n"), "{tapped}");
        assert!(frames[1].contains("RUN_STARTED"), "{tapped}");
        let rest: Vec<&str> = frames
            .iter()
            .copied()
            .filter(|f| !f.starts_with("event: a2a\n"))
            .collect();
        let plain: Vec<&str> = plain.split_terminator("\n\n").collect();
        assert_eq!(rest, plain);
        // The artifact's frame stands before its text.
        let artifact = frames
            .iter()
            .position(|f| f.contains("artifact-update"))
            .unwrap();
        assert!(
            frames[artifact + 1].contains("TEXT_MESSAGE_START"),
            "{tapped}"
        );
    }
}
