//! Writing events as SSE frames, in two output formats.
//!
//! - [`OutputFormat::Agui`]: official AG-UI, `data: <compact JSON>\n\n`, no
//!   `event:` line, LF only, as `@ag-ui/encoder` writes it.
//! - [`OutputFormat::Hector`]: the named-event format of the Hector seed,
//!   `event: content_block_delta\ndata: {"blockId":…,"delta":…}\n\n`, with
//!   flat camelCase payloads as in the seed's example. It is rendered from
//!   the same AG-UI events, so both formats always tell the same story.

mod hector;

pub use hector::HectorEncoder;

use crate::event::Event;

/// How converted events are written: the one name for this choice across
/// the command line (`--format`), the configuration (`format`) and the
/// query string (`?format=`). (It was once called the dialect, and the
/// gateway still accepts `--output`, `--dialect`, `output` and `?dialect=`.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputFormat {
    /// Official AG-UI events.
    #[default]
    Agui,
    /// The Hector seed's named events.
    Hector,
}

impl OutputFormat {
    /// Reads `agui` (also `ag-ui`) or `hector`, in any case.
    pub fn parse(name: &str) -> Option<OutputFormat> {
        match name.to_ascii_lowercase().as_str() {
            "agui" | "ag-ui" => Some(OutputFormat::Agui),
            "hector" => Some(OutputFormat::Hector),
            _ => None,
        }
    }

    /// The canonical name.
    pub fn as_str(self) -> &'static str {
        match self {
            OutputFormat::Agui => "agui",
            OutputFormat::Hector => "hector",
        }
    }
}

/// Appends one AG-UI frame. `timestamp` (ms since the epoch) is written as
/// an integer when the caller has a clock to read.
pub fn write_agui_frame(
    event: &Event,
    timestamp: Option<u64>,
    out: &mut Vec<u8>,
) -> Result<(), serde_json::Error> {
    out.extend_from_slice(b"data: ");
    serde_json::to_writer(&mut *out, event)?;
    if let Some(ms) = timestamp
        && out.last() == Some(&b'}')
    {
        out.pop();
        out.extend_from_slice(b",\"timestamp\":");
        push_decimal(out, ms);
        out.push(b'}');
    }
    out.extend_from_slice(b"\n\n");
    Ok(())
}

/// Appends `n` in decimal: every event carries a timestamp, and
/// `to_string` would allocate a `String` per event for it.
pub(crate) fn push_decimal(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// An encoder for one stream in the chosen format.
#[derive(Debug)]
pub enum Encoder {
    /// AG-UI: stateless.
    Agui,
    /// Hector: remembers what its named events need.
    Hector(Box<HectorEncoder>),
}

impl Encoder {
    /// A fresh encoder for one stream.
    pub fn new(format: OutputFormat) -> Encoder {
        match format {
            OutputFormat::Agui => Encoder::Agui,
            OutputFormat::Hector => Encoder::Hector(Box::default()),
        }
    }

    /// Appends one event's frame(s); `now_ms` stamps AG-UI frames.
    pub fn encode(
        &mut self,
        event: &Event,
        now_ms: Option<u64>,
        out: &mut Vec<u8>,
    ) -> Result<(), serde_json::Error> {
        match self {
            Encoder::Agui => write_agui_frame(event, now_ms, out),
            Encoder::Hector(hector) => hector.encode(event, out),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn decimals_are_written_as_to_string_would() {
        for n in [0, 7, 10, 99, 1_763_700_000_000, u64::MAX] {
            let mut out = Vec::new();
            super::push_decimal(&mut out, n);
            assert_eq!(out, n.to_string().into_bytes());
        }
    }
}
