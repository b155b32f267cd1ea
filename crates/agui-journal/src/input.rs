//! The converter input recorded with a run's frames, for a rebuild.

/// What was fed to a run's converter, recorded with the frames it
/// produced, so that another replica can rebuild the converter by feeding
/// the same again (the converter is deterministic; only its timestamps
/// differ, and the rebuild's output is thrown away).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputOp {
    /// A chunk of an upstream event stream.
    Sse,
    /// A whole JSON document (a non-streaming body, a task read on
    /// re-attaching).
    Json,
    /// `StreamConverter::reattach`.
    Reattach,
}

impl InputOp {
    fn tag(self) -> u8 {
        match self {
            InputOp::Sse => 1,
            InputOp::Json => 2,
            InputOp::Reattach => 3,
        }
    }

    /// Appends one op (tag, 4-byte length, bytes); an op too large to
    /// record is left out (the rebuild then falls short and says so).
    pub fn record(self, buffer: &mut Vec<u8>, bytes: &[u8]) {
        if let Ok(len) = u32::try_from(bytes.len()) {
            buffer.push(self.tag());
            buffer.extend_from_slice(&len.to_be_bytes());
            buffer.extend_from_slice(bytes);
        }
    }

    /// The ops of a recording, in order; `None` at the first malformed one.
    pub fn replay(mut recorded: &[u8], mut each: impl FnMut(InputOp, &[u8])) -> Option<()> {
        while let Some((&tag, rest)) = recorded.split_first() {
            let op = match tag {
                1 => InputOp::Sse,
                2 => InputOp::Json,
                3 => InputOp::Reattach,
                _ => return None,
            };
            let len = rest.get(..4)?;
            let len = u32::from_be_bytes([len[0], len[1], len[2], len[3]]) as usize;
            let bytes = rest.get(4..4 + len)?;
            each(op, bytes);
            recorded = &rest[4 + len..];
        }
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_ops_round_trip() {
        let mut recorded = Vec::new();
        InputOp::Sse.record(&mut recorded, b"data: 1\n\n");
        InputOp::Reattach.record(&mut recorded, b"");
        InputOp::Json.record(&mut recorded, b"{}");
        let mut ops = Vec::new();
        assert!(InputOp::replay(&recorded, |op, bytes| ops.push((op, bytes.to_vec()))).is_some());
        assert_eq!(
            ops,
            [
                (InputOp::Sse, b"data: 1\n\n".to_vec()),
                (InputOp::Reattach, Vec::new()),
                (InputOp::Json, b"{}".to_vec())
            ]
        );
        assert!(InputOp::replay(&recorded[..recorded.len() - 1], |_, _| {}).is_none());
        assert!(InputOp::replay(&[9, 0, 0, 0, 0], |_, _| {}).is_none());
    }
}
