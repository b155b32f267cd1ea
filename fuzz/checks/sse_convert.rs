//! The SSE parser and converter over any upstream bytes, cut into chunks
//! anywhere: the output is always one valid AG-UI run (what the real
//! clients' checks demand), whether the stream ends or fails.

#[path = "../../crates/a2a-agui/tests/common/mod.rs"]
mod common;

use a2a_agui::{ErrorCode, Options, OutputFormat, SequentialIds, StreamConverter, StreamEnd};

pub fn check(data: &[u8]) {
    let Some((&control, body)) = data.split_first() else {
        return;
    };
    let options = Options {
        interrupts: control & 1 != 0,
        ..Options::default()
    };
    // Small limits reach the oversized-event path too.
    let max_event_bytes = if control & 2 != 0 { 64 } else { 1 << 20 };
    let mut stream = StreamConverter::new(
        options,
        SequentialIds::default(),
        OutputFormat::Agui,
        max_event_bytes,
    );
    let mut out = Vec::new();
    let step = usize::from(control >> 3) + 1;
    let as_json = control & 4 != 0;
    if as_json {
        let _ = stream.feed_json(body, Some(0), &mut out);
    } else {
        for chunk in body.chunks(step) {
            let _ = stream.feed_sse(chunk, Some(0), &mut out);
            if stream.is_finished() {
                break;
            }
        }
    }
    let end = if control & 64 != 0 {
        StreamEnd::Failed {
            code: ErrorCode::UpstreamReadError,
            message: "cut".to_owned(),
        }
    } else {
        StreamEnd::Eof
    };
    let _ = stream.finish(end, Some(0), &mut out);
    let events = match common::parse_agui_body(&out) {
        Ok(events) => events,
        Err(err) => panic!("not an AG-UI SSE body: {err}"),
    };
    if let Err(err) = common::check_sequence(&events) {
        panic!("invalid run: {err}\n{}", String::from_utf8_lossy(&out));
    }
}
