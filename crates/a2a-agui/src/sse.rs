//! A push parser for `text/event-stream`, as the WHATWG spec defines it.
//!
//! Feed it bytes as they arrive; it calls back once per complete event.
//! Every byte is scanned once (linear time whatever the chunking), and one
//! event may hold at most `max_event_bytes`, so an upstream can neither pin a
//! CPU nor grow memory without bound. Line endings may be CRLF, LF or CR,
//! even mixed and split across chunks; `data:` lines are joined with `\n`;
//! comments, `id:` and `retry:` are read and dropped.

use std::fmt;

/// One dispatched event. `data` is raw bytes: the JSON reader validates
/// UTF-8 itself, so the parser does not pay for it twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SseEvent<'a> {
    /// The `event:` field, when one was given (the spec's default is "message").
    pub name: Option<&'a str>,
    /// The `data:` lines, joined with `\n`.
    pub data: &'a [u8],
}

/// Why the parser stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseError {
    /// One event (its data, name and pending line) exceeded the limit.
    EventTooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
}

impl fmt::Display for SseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SseError::EventTooLarge { limit } => {
                write!(f, "an upstream SSE event exceeded the {limit}-byte limit")
            }
        }
    }
}

impl std::error::Error for SseError {}

/// 16 MiB: large enough for base64 file parts, small enough to bound memory.
pub const DEFAULT_MAX_EVENT_BYTES: usize = 16 << 20;

#[derive(Debug)]
/// The parser's state between chunks.
pub struct SseParser {
    max_event_bytes: usize,
    /// The unfinished line carried over from the previous chunk.
    line: Vec<u8>,
    data: Vec<u8>,
    name: String,
    has_data: bool,
    /// The previous chunk ended in CR: a leading LF completes that ending.
    after_cr: bool,
    at_stream_start: bool,
    failed: bool,
}

impl Default for SseParser {
    fn default() -> Self {
        SseParser::new(DEFAULT_MAX_EVENT_BYTES)
    }
}

impl SseParser {
    /// A parser refusing events larger than `max_event_bytes`.
    pub fn new(max_event_bytes: usize) -> Self {
        SseParser {
            max_event_bytes,
            line: Vec::new(),
            data: Vec::new(),
            name: String::new(),
            has_data: false,
            after_cr: false,
            at_stream_start: true,
            failed: false,
        }
    }

    /// Forgets a partly read event: the next chunk starts a new stream.
    pub fn reset(&mut self) {
        *self = SseParser::new(self.max_event_bytes);
    }

    /// Parses `chunk`, calling `on_event` for each event it completes. After
    /// an error the parser stays failed and reads nothing more.
    pub fn feed<F>(&mut self, mut chunk: &[u8], mut on_event: F) -> Result<(), SseError>
    where
        F: FnMut(SseEvent<'_>),
    {
        if self.failed {
            return Err(self.too_large());
        }
        if self.at_stream_start && !chunk.is_empty() {
            self.at_stream_start = false;
            chunk = chunk.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(chunk);
        }
        if self.after_cr {
            self.after_cr = false;
            chunk = chunk.strip_prefix(b"\n").unwrap_or(chunk);
        }
        // A `data:` line inside this chunk is not copied until a second data
        // line or the chunk's end requires it: most events are one line.
        let mut single_line: Option<(usize, usize)> = None;
        let whole = chunk;
        while let Some(end) = memchr::memchr2(b'\n', b'\r', chunk) {
            let ending_len = match (chunk[end], chunk.get(end + 1)) {
                (b'\r', Some(b'\n')) => 2,
                (b'\r', None) => {
                    self.after_cr = true;
                    1
                }
                _ => 1,
            };
            if self.line.is_empty() {
                let line = &chunk[..end];
                let offset = whole.len() - chunk.len();
                match (line.strip_prefix(b"data:"), self.has_data) {
                    (Some(value), false) if single_line.is_none() => {
                        let value = value.strip_prefix(b" ").unwrap_or(value);
                        self.check_size(value.len())?;
                        let start = offset + (line.len() - value.len());
                        single_line = Some((start, start + value.len()));
                        self.has_data = true;
                    }
                    (None, _) if line.is_empty() && single_line.is_some() => {
                        if let Some((start, stop)) = single_line.take() {
                            on_event(SseEvent {
                                name: (!self.name.is_empty()).then_some(self.name.as_str()),
                                data: &whole[start..stop],
                            });
                        }
                        self.name.clear();
                        self.has_data = false;
                    }
                    _ => {
                        if let Some((start, stop)) = single_line.take() {
                            self.data.extend_from_slice(&whole[start..stop]);
                        }
                        self.take_line(line, &mut on_event)?;
                    }
                }
            } else {
                self.extend_line(&chunk[..end])?;
                let line = std::mem::take(&mut self.line);
                let outcome = self.take_line(&line, &mut on_event);
                self.line = line;
                self.line.clear();
                shrink(&mut self.line);
                outcome?;
            }
            chunk = &chunk[end + ending_len..];
        }
        if let Some((start, stop)) = single_line {
            self.data.extend_from_slice(&whole[start..stop]);
        }
        self.extend_line(chunk)
    }

    /// The input has ended: a last line without its line ending and a last
    /// event without its blank line are still delivered.
    pub fn finish<F>(&mut self, mut on_event: F) -> Result<(), SseError>
    where
        F: FnMut(SseEvent<'_>),
    {
        if self.failed {
            return Err(self.too_large());
        }
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.take_line(&line, &mut on_event)?;
        }
        self.dispatch(&mut on_event);
        Ok(())
    }

    fn too_large(&self) -> SseError {
        SseError::EventTooLarge {
            limit: self.max_event_bytes,
        }
    }

    fn check_size(&mut self, extra: usize) -> Result<(), SseError> {
        if self.data.len() + self.line.len() + self.name.len() + extra > self.max_event_bytes {
            self.failed = true;
            self.line = Vec::new();
            self.data = Vec::new();
            return Err(self.too_large());
        }
        Ok(())
    }

    fn extend_line(&mut self, bytes: &[u8]) -> Result<(), SseError> {
        self.check_size(bytes.len())?;
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    fn take_line<F>(&mut self, line: &[u8], on_event: &mut F) -> Result<(), SseError>
    where
        F: FnMut(SseEvent<'_>),
    {
        if line.is_empty() {
            self.dispatch(on_event);
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        match field {
            b"data" => {
                self.check_size(value.len() + 1)?;
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            b"event" => {
                self.check_size(value.len())?;
                self.name.clear();
                self.name.push_str(&String::from_utf8_lossy(value));
            }
            // id, retry and unknown fields: nothing this gateway acts on.
            _ => {}
        }
        Ok(())
    }

    fn dispatch<F>(&mut self, on_event: &mut F)
    where
        F: FnMut(SseEvent<'_>),
    {
        if self.has_data {
            on_event(SseEvent {
                name: (!self.name.is_empty()).then_some(self.name.as_str()),
                data: &self.data,
            });
        }
        self.data.clear();
        shrink(&mut self.data);
        self.name.clear();
        self.has_data = false;
    }
}

/// What an idle parser keeps of a buffer that one large event grew: a
/// stream's buffers stay small between events, whatever came before.
const KEPT_CAPACITY: usize = 64 << 10;

fn shrink(buffer: &mut Vec<u8>) {
    if buffer.capacity() > KEPT_CAPACITY {
        buffer.shrink_to(KEPT_CAPACITY);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_in_chunks(input: &[u8], chunk: usize) -> Vec<(Option<String>, String)> {
        let mut parser = SseParser::default();
        let mut events = Vec::new();
        let mut collect = |e: SseEvent<'_>| {
            events.push((
                e.name.map(str::to_owned),
                String::from_utf8_lossy(e.data).into_owned(),
            ));
        };
        for piece in input.chunks(chunk.max(1)) {
            parser.feed(piece, &mut collect).unwrap();
        }
        parser.finish(&mut collect).unwrap();
        events
    }

    #[test]
    fn every_line_ending_and_chunking_gives_the_same_events() {
        let lf = b"data: {\"a\":1}\n\nevent: error\ndata: x\ndata: y\n\n: ping\n\ndata:z\n\n";
        let expected = vec![
            (None, "{\"a\":1}".to_owned()),
            (Some("error".to_owned()), "x\ny".to_owned()),
            (None, "z".to_owned()),
        ];
        let crlf = String::from_utf8_lossy(lf).replace('\n', "\r\n");
        let cr = String::from_utf8_lossy(lf).replace('\n', "\r");
        for input in [lf.to_vec(), crlf.into_bytes(), cr.into_bytes()] {
            for chunk in [1, 2, 3, 7, 1000] {
                assert_eq!(parse_in_chunks(&input, chunk), expected, "chunk {chunk}");
            }
        }
    }

    #[test]
    fn trailing_event_without_blank_line_is_delivered() {
        assert_eq!(
            parse_in_chunks(b"data: last", 4),
            vec![(None, "last".to_owned())]
        );
    }

    #[test]
    fn bom_is_stripped_and_empty_events_are_not_dispatched() {
        assert_eq!(
            parse_in_chunks(b"\xEF\xBB\xBFevent: ping\n\ndata: 1\n\n", 1),
            vec![(None, "1".to_owned())]
        );
    }

    #[test]
    fn oversized_event_fails_and_stays_failed() {
        let mut parser = SseParser::new(10);
        assert!(parser.feed(b"data: 0123", |_| {}).is_ok());
        assert_eq!(
            parser.feed(b"456789", |_| {}),
            Err(SseError::EventTooLarge { limit: 10 })
        );
        assert!(parser.feed(b"\n\n", |_| {}).is_err());
        assert!(parser.finish(|_| {}).is_err());
    }
}
