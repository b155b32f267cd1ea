//! Agent answers the gateway reads for its own use (a thread's task list,
//! a task and its history, a card), as opposed to answers it streams on.
//!
//! Their size is the agent's choice, and what they cost the gateway is not
//! just their bytes: 15 MiB of small numbers read into a `serde_json::Value`
//! is half a gigabyte. So each is bounded twice while it grows:
//! - its bytes, per answer (the caller's limit) and, for all answers being
//!   read at once, `ANSWER_BYTES`: an answer that cannot get room is not
//!   read (`None`), as if the agent had not answered;
//! - its JSON elements when parsed (`parse`): past the budget the parse
//!   stops, where the element that would cross it is met.

use std::fmt;
use std::sync::{Arc, LazyLock};

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The bytes of all such answers being read or held at once, in KiB.
const ANSWER_KIB: usize = 64 << 10;

/// The JSON elements (every value: objects, arrays, scalars) one answer may
/// hold: a list of 100 tasks with long histories holds tens of thousands; a
/// `Value` element costs 32 to ~100 bytes, so this is at most ~13 MB.
pub const MAX_ELEMENTS: usize = 1 << 17;

/// The budget every agent answer read for the gateway's use shares: one per
/// process, as memory is.
static ANSWER_BYTES: LazyLock<Arc<Semaphore>> =
    LazyLock::new(|| Arc::new(Semaphore::new(ANSWER_KIB)));

/// An answer's bytes, with their room in the shared budget (given back
/// when dropped).
pub struct Answer {
    bytes: Vec<u8>,
    _room: Option<OwnedSemaphorePermit>,
}

impl std::ops::Deref for Answer {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.bytes
    }
}

impl fmt::Debug for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Answer({} bytes)", self.bytes.len())
    }
}

impl Answer {
    /// The bytes, leaving the budget (a caller that keeps them, a run's
    /// snapshot, is bounded by its own rules).
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }
}

/// Why an answer was not read whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Unread {
    #[error("the agent's answer is over its size limit")]
    TooLarge,
    #[error("the agent answers being read fill the gateway's budget for them")]
    NoRoom,
}

/// An answer being read: room is taken before the bytes that need it are
/// kept, a KiB at a time, never waited for (waiting readers holding part of
/// the budget each could wait on each other for ever).
#[derive(Default)]
pub struct Growing {
    bytes: Vec<u8>,
    room: Option<OwnedSemaphorePermit>,
    kib: usize,
}

impl Growing {
    /// Appends `chunk` when the answer stays within `limit` and the shared
    /// budget has room; keeps nothing more when not, and says which.
    pub fn extend(&mut self, chunk: &[u8], limit: usize) -> Result<(), Unread> {
        let len = self.bytes.len().saturating_add(chunk.len());
        if len > limit {
            return Err(Unread::TooLarge);
        }
        let kib = len.div_ceil(1024);
        if kib > self.kib {
            let permit = u32::try_from(kib - self.kib)
                .ok()
                .and_then(|more| ANSWER_BYTES.clone().try_acquire_many_owned(more).ok())
                .ok_or(Unread::NoRoom)?;
            match &mut self.room {
                Some(room) => room.merge(permit),
                None => self.room = Some(permit),
            }
            self.kib = kib;
        }
        self.bytes.extend_from_slice(chunk);
        Ok(())
    }

    pub fn done(self) -> Answer {
        Answer {
            bytes: self.bytes,
            _room: self.room,
        }
    }
}

/// `bytes` as JSON, or `None` when they are not JSON or hold more than
/// `max_elements` elements.
pub fn parse(bytes: &[u8], max_elements: usize) -> Option<Value> {
    parse_within(bytes, &mut { max_elements })
}

/// `parse`, spending `left`: several answers (a list's pages, a thread's
/// tasks) share one budget.
pub fn parse_within(bytes: &[u8], left: &mut usize) -> Option<Value> {
    let mut reader = serde_json::Deserializer::from_slice(bytes);
    let value = Budgeted { left }.deserialize(&mut reader).ok()?;
    reader.end().ok()?;
    Some(value)
}

/// A `Value` built while counting its elements against `left`.
struct Budgeted<'a> {
    left: &'a mut usize,
}

impl Budgeted<'_> {
    fn take<E: de::Error>(&mut self) -> Result<(), E> {
        match self.left.checked_sub(1) {
            Some(left) => {
                *self.left = left;
                Ok(())
            }
            None => Err(E::custom("too many JSON elements")),
        }
    }
}

impl<'de> DeserializeSeed<'de> for Budgeted<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Budgeted<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("JSON")
    }

    fn visit_bool<E: de::Error>(mut self, v: bool) -> Result<Value, E> {
        self.take()?;
        Ok(Value::Bool(v))
    }
    fn visit_i64<E: de::Error>(mut self, v: i64) -> Result<Value, E> {
        self.take()?;
        Ok(Value::from(v))
    }
    fn visit_u64<E: de::Error>(mut self, v: u64) -> Result<Value, E> {
        self.take()?;
        Ok(Value::from(v))
    }
    fn visit_f64<E: de::Error>(mut self, v: f64) -> Result<Value, E> {
        self.take()?;
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E: de::Error>(mut self, v: &str) -> Result<Value, E> {
        self.take()?;
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E: de::Error>(mut self, v: String) -> Result<Value, E> {
        self.take()?;
        Ok(Value::String(v))
    }
    fn visit_unit<E: de::Error>(mut self) -> Result<Value, E> {
        self.take()?;
        Ok(Value::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        self.visit_unit()
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<Value, A::Error> {
        self.take()?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Budgeted {
            left: &mut *self.left,
        })? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Value, A::Error> {
        self.take()?;
        let mut object = Map::new();
        // A key is an element too: a million keys over one small value
        // each are as costly as a million values.
        while let Some(key) = map.next_key::<String>()? {
            self.take()?;
            let value = map.next_value_seed(Budgeted {
                left: &mut *self.left,
            })?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parse_within_the_budget_is_serde_jsons() {
        let text = br#"{"a":[1,2.5,-3,"x",null,true,{"b":{}}],"c":"\u00e9"}"#;
        let expected: Value = serde_json::from_slice(text).unwrap();
        assert_eq!(parse(text, 100), Some(expected));
        // The object, its 2 keys and their values (an array, a string),
        // the array's 7 items, the inner object's key and value: 14.
        assert!(parse(text, 14).is_some());
        assert_eq!(parse(text, 13), None);
    }

    #[test]
    fn a_parse_stops_at_the_element_that_crosses_the_budget() {
        // 15 MiB of small numbers: stopped after the first few, not built.
        let mut text = b"[".to_vec();
        text.extend(std::iter::repeat_n(&b"1,"[..], 1 << 20).flatten());
        text.extend_from_slice(b"1]");
        assert_eq!(parse(&text, MAX_ELEMENTS), None);
        assert_eq!(parse(b"[1,2] x", 10), None);
        assert_eq!(parse(b"not json", 10), None);
    }

    #[test]
    fn a_growing_answer_keeps_to_its_limit() {
        let mut answer = Growing::default();
        assert_eq!(answer.extend(&[b'x'; 1500], 2000), Ok(()));
        assert_eq!(answer.extend(&[b'x'; 600], 2000), Err(Unread::TooLarge));
        assert_eq!(answer.extend(&[b'x'; 500], 2000), Ok(()));
        assert_eq!(answer.done().len(), 2000);
    }
}
