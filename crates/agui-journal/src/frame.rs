//! Where a frame starts inside a chunk the converter wrote.

/// Where frame `n` starts in a chunk: every frame opens with its id line.
pub fn frame_start(chunk: &[u8], key: &str, n: u64) -> Option<usize> {
    let needle = format!("id: {key}.{n}\n");
    let needle = needle.as_bytes();
    if chunk.starts_with(needle) {
        return Some(0);
    }
    // Frames end with a blank line, so a frame's start follows "\n\n".
    chunk
        .windows(needle.len() + 2)
        .position(|w| w.starts_with(b"\n\n") && &w[2..] == needle)
        .map(|at| at + 2)
}

/// Where what follows frame `n` starts in a chunk: past the blank line
/// that ends it. What follows may be frames without an id (the
/// inspector's tapped upstream events, a keep-alive) that go with the
/// next frame.
pub fn after_frame(chunk: &[u8], key: &str, n: u64) -> Option<usize> {
    let start = frame_start(chunk, key, n)?;
    chunk[start..]
        .windows(2)
        .position(|w| w == b"\n\n")
        .map(|at| start + at + 2)
}
