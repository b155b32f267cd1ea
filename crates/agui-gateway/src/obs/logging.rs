//! The log: text for people, JSON for shippers, and in either form one
//! line per event whatever the values in it. Log lines carry what clients
//! and agents sent (an agent's error body, a refused origin, a path): in
//! text, a line break in such a value would start a line that looks like
//! the gateway's own, so every field is escaped as it is written; JSON
//! escapes by itself.

use std::borrow::Cow;
use std::fmt::{self, Write as _};
use std::io::IsTerminal;

use tracing_subscriber::field::MakeExt;
use tracing_subscriber::fmt::format::{Writer, debug_fn};

/// How log lines are written (`--log-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// Installs the process's logger on standard error; `AGUI_GATEWAY_LOG`
/// filters it (`info` by default).
pub fn init(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("AGUI_GATEWAY_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        // Log shippers read one JSON object per line: the event's fields
        // at the top level, no colour codes.
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .try_init(),
        // Colour codes only for a person at a terminal, never in a file.
        LogFormat::Text => builder
            .with_ansi(std::io::stderr().is_terminal())
            .fmt_fields(escaped_fields())
            .try_init(),
    };
}

/// A line the gateway prints on standard output for people and scripts
/// (where it listens, the demo's commands): as it is in text, as a log
/// object in JSON (written by the same formatter as the log), so that
/// every line of a JSON log parses.
pub fn announce(format: LogFormat, text: &str) {
    match format {
        LogFormat::Text => println!("{text}"),
        LogFormat::Json => {
            let stdout = tracing_subscriber::fmt()
                .json()
                .flatten_event(true)
                .with_current_span(false)
                .with_writer(std::io::stdout)
                .finish();
            tracing::subscriber::with_default(stdout, || tracing::info!("{text}"));
        }
    }
}

/// The text log's field formatter: `name=value` (the message bare), each
/// value with its control characters escaped.
fn escaped_fields() -> impl for<'w> tracing_subscriber::fmt::FormatFields<'w> + 'static {
    debug_fn(
        |writer: &mut Writer<'_>, field: &tracing::field::Field, value: &dyn fmt::Debug| {
            let mut text = String::new();
            let _ = write!(text, "{value:?}");
            let text = escape_controls(&text);
            if field.name() == "message" {
                writer.write_str(&text)
            } else {
                write!(writer, "{}={text}", field.name())
            }
        },
    )
    .delimited(" ")
}

/// `text` with every control character (line breaks, escape sequences,
/// Unicode line separators) written as an escape: `\n`, `\r`, `\t`,
/// `\u{1b}`.
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() || c == '\u{2028}' || c == '\u{2029}';
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if unsafe_char(c) => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forged_line_stays_inside_its_field() {
        let forged =
            "boom\n2026-01-01T00:00:00Z  INFO agui_gateway::access: request\r\u{1b}[2J\u{2028}";
        let escaped = escape_controls(forged);
        assert!(
            !escaped.contains(['\n', '\r', '\u{1b}', '\u{2028}']),
            "{escaped}"
        );
        assert!(escaped.starts_with("boom\\n2026"), "{escaped}");
        assert_eq!(escape_controls("plain text"), Cow::Borrowed("plain text"));
    }
}
