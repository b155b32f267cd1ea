//! Fingerprints of text already streamed, so that a closing status message
//! or Task snapshot that repeats it can be recognised without keeping the
//! text itself (which would make memory grow with the run).

/// FNV-1a over the bytes, plus the length. Collisions need the same length
/// and a 64-bit hash match, which is good enough to skip a repeat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TextDigest {
    hash: u64,
    len: usize,
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

impl Default for TextDigest {
    fn default() -> Self {
        TextDigest {
            hash: FNV_OFFSET,
            len: 0,
        }
    }
}

impl TextDigest {
    pub(crate) fn of(text: &str) -> TextDigest {
        let mut digest = TextDigest::default();
        digest.update(text);
        digest
    }

    pub(crate) fn update(&mut self, text: &str) {
        let mut hash = self.hash;
        for byte in text.as_bytes() {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(FNV_PRIME);
        }
        self.hash = hash;
        self.len += text.len();
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }
}
