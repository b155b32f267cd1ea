//! Fingerprints of text already streamed, so that a closing status message
//! or Task snapshot that repeats it can be recognised without keeping the
//! text itself (which would make memory grow with the run).

/// A 64-bit hash of the bytes plus their length. It mixes eight bytes at a
/// time but carries a partial word between updates, so the digest of a text
/// does not depend on how it was split: `update("ab"); update("c")` equals
/// `of("abc")`, which is what prefix checks rely on. Collisions need equal
/// length and hash, which is good enough to skip a repeat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TextDigest {
    hash: u64,
    len: usize,
    /// Bytes of the word not yet mixed in, little-endian.
    pending: u64,
}

const SEED: u64 = 0xcbf2_9ce4_8422_2325;
const MULTIPLIER: u64 = 0x9e37_79b9_7f4a_7c15;

impl Default for TextDigest {
    fn default() -> Self {
        TextDigest {
            hash: SEED,
            len: 0,
            pending: 0,
        }
    }
}

fn mix(hash: u64, word: u64) -> u64 {
    (hash.rotate_left(23) ^ word).wrapping_mul(MULTIPLIER)
}

impl TextDigest {
    pub(crate) fn of(text: &str) -> TextDigest {
        let mut digest = TextDigest::default();
        digest.update(text);
        digest
    }

    pub(crate) fn update(&mut self, text: &str) {
        self.add(text.as_bytes());
    }

    fn add(&mut self, mut bytes: &[u8]) {
        // Finish the partial word first, one byte at a time.
        while !self.len.is_multiple_of(8) {
            let Some((&byte, rest)) = bytes.split_first() else {
                return;
            };
            self.pending |= u64::from(byte) << (8 * (self.len % 8));
            self.len += 1;
            bytes = rest;
            if self.len.is_multiple_of(8) {
                self.hash = mix(self.hash, self.pending);
                self.pending = 0;
            }
        }
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            let mut array = [0u8; 8];
            array.copy_from_slice(word);
            self.hash = mix(self.hash, u64::from_le_bytes(array));
        }
        self.len += bytes.len() - words.remainder().len();
        for (shift, &byte) in words.remainder().iter().enumerate() {
            self.pending |= u64::from(byte) << (8 * shift);
        }
        self.len += words.remainder().len();
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The digest of a JSON value's compact serialisation.
    pub(crate) fn of_json(value: &impl serde::Serialize) -> TextDigest {
        let mut digest = TextDigest::default();
        // Writing into a digest cannot fail, and a value that cannot be
        // serialised simply hashes what was written before the error.
        let _ = serde_json::to_writer(&mut digest, value);
        digest
    }
}

/// Lets `serde_json::to_writer` feed a digest without building a string.
impl std::io::Write for TextDigest {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.add(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A fast hasher for the converter's small per-run maps (artifact ids, tool
/// call ids). Those maps are bounded by `MAX_TRACKED`, so keys crafted to
/// collide cannot make them grow; SipHash's protection is not needed there
/// and cost three lookups' worth of time on every chunk.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct WordHasher(u64);

impl std::hash::Hasher for WordHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            let mut array = [0u8; 8];
            array.copy_from_slice(word);
            self.0 = mix(self.0, u64::from_le_bytes(array));
        }
        let mut tail = 0u64;
        for (shift, &byte) in words.remainder().iter().enumerate() {
            tail |= u64::from(byte) << (8 * shift);
        }
        self.0 = mix(self.0, tail ^ (bytes.len() as u64) << 56);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

pub(crate) type WordHashBuilder = std::hash::BuildHasherDefault<WordHasher>;

#[cfg(test)]
mod tests {
    use super::TextDigest;

    #[test]
    fn digest_does_not_depend_on_how_the_text_was_split() {
        let text = "Hello there, a text of some length! ünïcödé";
        for split in 0..text.len() {
            if !text.is_char_boundary(split) {
                continue;
            }
            let mut digest = TextDigest::default();
            digest.update(&text[..split]);
            digest.update(&text[split..]);
            assert_eq!(digest, TextDigest::of(text), "split at {split}");
        }
        assert_ne!(TextDigest::of("ab"), TextDigest::of("ba"));
        assert_ne!(TextDigest::of("a"), TextDigest::of("a\0"));
    }
}
