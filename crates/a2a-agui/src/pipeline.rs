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
        }
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
        let parsed = self
            .parser
            .feed(chunk, |e| converter.push_sse(e.name, e.data, events));
        self.fail_on_oversized(parsed);
        self.encode(now_ms, out)
    }

    /// A whole JSON body: one document (a non-streaming result, an error
    /// body) or several (JSON Lines).
    pub fn feed_json(
        &mut self,
        body: &[u8],
        now_ms: Option<u64>,
        out: &mut Vec<u8>,
    ) -> Result<(), serde_json::Error> {
        self.events.clear();
        for document in serde_json::Deserializer::from_slice(body).into_iter::<Value>() {
            match document {
                Ok(value) => self.converter.push_value(&value, &mut self.events),
                Err(err) => {
                    self.converter.finish(
                        StreamEnd::Failed {
                            code: ErrorCode::MalformedEvent,
                            message: format!("upstream sent a body that is not valid JSON: {err}"),
                        },
                        &mut self.events,
                    );
                    break;
                }
            }
        }
        self.encode(now_ms, out)
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
            let parsed = self
                .parser
                .finish(|e| converter.push_sse(e.name, e.data, events));
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
        for event in &self.events {
            self.encoder.encode(event, now_ms, out)?;
        }
        Ok(())
    }
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

/// An SSE body starts (after a BOM and blank lines) with a field or comment;
/// a JSON body starts with `{` or `[`.
pub fn looks_like_sse(input: &[u8]) -> bool {
    let input = input.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(input);
    match input.iter().position(|b| !b.is_ascii_whitespace()) {
        Some(start) => !matches!(input[start], b'{' | b'['),
        None => false,
    }
}
