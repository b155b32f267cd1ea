//! A run's stream entries, read back from Redis's replies (`XRANGE`,
//! `XREVRANGE`, `XREAD`).

use bytes::Bytes;
use redis::Value as RedisValue;

use super::SharedError;

/// One chunk: frames `first..=last`, the input that produced them.
#[derive(Debug, Clone)]
pub struct Entry {
    pub first: u64,
    pub last: u64,
    pub out: Bytes,
    pub input: Vec<u8>,
    pub terminal: bool,
}

pub(super) fn parse_entries(reply: RedisValue) -> Result<Vec<Entry>, SharedError> {
    let RedisValue::Array(items) = reply else {
        return Ok(Vec::new());
    };
    let mut entries = Vec::with_capacity(items.len());
    for item in items {
        let RedisValue::Array(mut pair) = item else {
            return Err(SharedError::Malformed("entry"));
        };
        if pair.len() != 2 {
            return Err(SharedError::Malformed("entry"));
        }
        let fields = pair.remove(1);
        let id = match pair.remove(0) {
            RedisValue::BulkString(id) => String::from_utf8(id).ok(),
            RedisValue::SimpleString(id) => Some(id),
            _ => None,
        };
        let last = id
            .as_deref()
            .and_then(|id| id.strip_prefix("0-"))
            .and_then(|n| n.parse().ok())
            .ok_or(SharedError::Malformed("entry id"))?;
        let mut entry = Entry {
            first: 0,
            last,
            out: Bytes::new(),
            input: Vec::new(),
            terminal: false,
        };
        let RedisValue::Array(fields) = fields else {
            return Err(SharedError::Malformed("entry fields"));
        };
        let mut fields = fields.into_iter();
        while let (Some(name), Some(value)) = (fields.next(), fields.next()) {
            let (RedisValue::BulkString(name), RedisValue::BulkString(value)) = (name, value)
            else {
                return Err(SharedError::Malformed("entry field"));
            };
            match name.as_slice() {
                b"f" => {
                    entry.first = std::str::from_utf8(&value)
                        .ok()
                        .and_then(|n| n.parse().ok())
                        .ok_or(SharedError::Malformed("entry first"))?;
                }
                b"o" => entry.out = Bytes::from(value),
                b"i" => entry.input = value,
                b"t" => entry.terminal = value == b"1",
                _ => {}
            }
        }
        entries.push(entry);
    }
    Ok(entries)
}
