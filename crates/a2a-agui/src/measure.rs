//! The size of a JSON value as this crate would write it, measured against
//! a budget: the walk stops as soon as the budget is spent, so measuring a
//! value an agent made huge costs no more than the budget, and nothing is
//! allocated.

use std::fmt::Write;

use serde_json::Value;

/// The length of `value` serialised compactly (as `serde_json::to_vec`
/// writes it), or `None` once that exceeds `budget`.
pub(crate) fn json_len(value: &Value, budget: usize) -> Option<usize> {
    let mut left = budget;
    spend(value, &mut left)?;
    Some(budget - left)
}

/// The length of `text` as a JSON string: quotes and escapes included.
pub(crate) fn string_len(text: &str) -> usize {
    2 + text
        .bytes()
        .map(|b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0..0x20 => 6,
            _ => 1,
        })
        .sum::<usize>()
}

fn take(left: &mut usize, bytes: usize) -> Option<()> {
    *left = left.checked_sub(bytes)?;
    Some(())
}

fn spend(value: &Value, left: &mut usize) -> Option<()> {
    match value {
        Value::Null => take(left, 4),
        Value::Bool(true) => take(left, 4),
        Value::Bool(false) => take(left, 5),
        Value::Number(number) => {
            let mut counter = Counter(0);
            let _ = write!(counter, "{number}");
            take(left, counter.0)
        }
        Value::String(text) => take(left, string_len(text)),
        Value::Array(items) => {
            // Brackets, and a comma between items.
            take(left, 2 + items.len().saturating_sub(1))?;
            items.iter().try_for_each(|item| spend(item, left))
        }
        Value::Object(members) => {
            // Braces, a comma between members, a colon in each.
            take(left, 2 + members.len().saturating_sub(1) + members.len())?;
            members.iter().try_for_each(|(key, item)| {
                take(left, string_len(key))?;
                spend(item, left)
            })
        }
    }
}

/// Counts what is written instead of keeping it.
struct Counter(usize);

impl Write for Counter {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0 += s.len();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_measure_is_what_serde_json_writes() {
        for value in [
            json!(null),
            json!(true),
            json!(false),
            json!(-12),
            json!(1.5e300),
            json!(0.1),
            json!(u64::MAX),
            json!("plain"),
            json!("q\"b\\n\nt\tc\u{1}d\u{7f}é😀"),
            json!([]),
            json!({}),
            json!([1, [2, [3, {}]], "x"]),
            json!({ "a": { "b\n": [null, false] }, "": "" }),
        ] {
            let written = serde_json::to_vec(&value).unwrap().len();
            assert_eq!(json_len(&value, written), Some(written), "{value}");
            assert_eq!(json_len(&value, written - 1), None, "{value}");
        }
    }

    #[test]
    fn a_huge_value_is_refused_within_the_budget() {
        let wide = Value::Array(vec![json!("x".repeat(100)); 100_000]);
        assert_eq!(json_len(&wide, 1000), None);
    }
}
