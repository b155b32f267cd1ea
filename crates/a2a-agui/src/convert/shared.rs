//! The client's shared state, as far as this run knows it: the state the
//! client sent (`Options::state`), then every snapshot and patch the agent
//! sent. A 1.0 client gets patches as `STATE_DELTA`; an older one whose
//! state is known gets the patched state as `STATE_SNAPSHOT` instead,
//! because `@ag-ui/client` 0.0.48 cannot apply any patch ("applyPatch is
//! not a function") and a snapshot means the same to every version.

use serde_json::Value;

use super::Converter;
use crate::convert::AguiVersion;
use crate::event::custom::{Custom, ErrorNotice};
use crate::event::{Event, Patch};
use crate::ids::IdSource;
use crate::measure::{json_len, string_len};

/// The largest shared state followed, serialised: past it, patches go out
/// as they came (the client applies them; 0.0.48 cannot).
pub(super) const MAX_SHARED_STATE_BYTES: usize = 1 << 20;

/// The state a run starts from: followed only for clients before 1.0 (a 1.0
/// client applies patches itself) and only while small enough.
pub(super) fn initial(options: &crate::convert::Options) -> Option<Value> {
    (options.version == AguiVersion::Legacy)
        .then(|| options.state.clone())
        .flatten()
        .filter(within_bound)
}

fn within_bound(state: &Value) -> bool {
    json_len(state, MAX_SHARED_STATE_BYTES).is_some()
}

impl<I: IdSource> Converter<I> {
    pub(super) fn state_snapshot(&mut self, snapshot: &Value, out: &mut Vec<Event>) {
        if self.options.version == AguiVersion::Legacy {
            self.shared_state = Some(snapshot.clone()).filter(within_bound);
        }
        out.push(Event::StateSnapshot {
            snapshot: snapshot.clone(),
        });
    }

    /// A patch: a delta for a 1.0 client; for an older one the patched
    /// state, when the base is known.
    pub(super) fn state_patch(&mut self, patch: Patch, out: &mut Vec<Event>) {
        let Some(state) = self.shared_state.as_ref() else {
            return out.push(Event::StateDelta { delta: patch });
        };
        let ops: Vec<Value> = match &patch {
            Patch::Agent(ops) => ops.clone(),
            Patch::Ops(ops) => ops
                .iter()
                .filter_map(|op| serde_json::to_value(op).ok())
                .collect(),
        };
        match patched(state, &ops, MAX_SHARED_STATE_BYTES) {
            Ok(next) => {
                out.push(Event::StateSnapshot {
                    snapshot: next.clone(),
                });
                self.shared_state = Some(next);
            }
            // It fails on the client's state as well (the same state): say
            // so instead of sending what no client can apply.
            Err(Refusal::DoesNotApply) => out.push(Event::Custom(Custom::Error(ErrorNotice {
                message: Some(
                    "the agent's state patch does not apply to the shared state".to_owned(),
                ),
                code: Some("STATE_PATCH_FAILED".to_owned()),
            }))),
            // The state is no longer followed: the patch goes out as it came.
            Err(Refusal::TooLarge) => {
                self.shared_state = None;
                out.push(Event::StateDelta { delta: patch });
            }
        }
    }
}

/// Operations followed in one patch; a longer patch is passed on as it came.
pub(super) const MAX_PATCH_OPS: usize = 1024;

/// Why a patch was not applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    /// An operation does not apply (RFC 6902: the whole patch fails).
    DoesNotApply,
    /// The state would outgrow `limit`, or the patch has too many operations.
    TooLarge,
}

/// `state` with `ops` applied, never larger than `limit` bytes serialised
/// at any point: each operation's growth is measured (within what is left
/// of the limit) before it is made, so a patch that copies the state into
/// itself is refused at the operation that crosses the limit, not after
/// it doubled the state a few dozen times.
fn patched(state: &Value, ops: &[Value], limit: usize) -> Result<Value, Refusal> {
    if ops.len() > MAX_PATCH_OPS {
        return Err(Refusal::TooLarge);
    }
    let mut doc = Document {
        size: json_len(state, limit).ok_or(Refusal::TooLarge)?,
        value: state.clone(),
        limit,
    };
    for op in ops {
        doc.apply(op)?;
    }
    // The running size is an upper bound (a removal gives back less than
    // its member took); the real one decides.
    json_len(&doc.value, limit).ok_or(Refusal::TooLarge)?;
    Ok(doc.value)
}

/// A document being patched and an upper bound of its serialised size.
struct Document {
    value: Value,
    size: usize,
    limit: usize,
}

impl Document {
    /// Applies one RFC 6902 operation.
    fn apply(&mut self, op: &Value) -> Result<(), Refusal> {
        let field = |name: &str| op.get(name).ok_or(Refusal::DoesNotApply);
        let text = |name: &str| field(name)?.as_str().ok_or(Refusal::DoesNotApply);
        let path = text("path")?;
        match text("op")? {
            "add" => {
                let value = field("value")?;
                let room = self.room_for(path)?;
                let len = self.fit(value, room)?;
                self.insert(path, value.clone(), room, len)
            }
            "remove" => self.remove(path).map(drop),
            "replace" => {
                let value = field("value")?;
                let old = self.value.pointer(path).ok_or(Refusal::DoesNotApply)?;
                let kept = self
                    .size
                    .saturating_sub(json_len(old, usize::MAX).unwrap_or(0));
                let len = self.fit(value, (kept, 0))?;
                let value = value.clone();
                if let Some(slot) = self.value.pointer_mut(path) {
                    *slot = value;
                }
                self.size = kept + len;
                Ok(())
            }
            "move" => {
                let from = text("from")?;
                if path
                    .strip_prefix(from)
                    .is_some_and(|rest| rest.starts_with('/'))
                {
                    return Err(Refusal::DoesNotApply); // into its own child
                }
                let (value, len) = self.remove(from)?;
                let room = self.room_for(path)?;
                if room.0 + room.1 + len > self.limit {
                    return Err(Refusal::TooLarge);
                }
                self.insert(path, value, room, len)
            }
            "copy" => {
                let source = self
                    .value
                    .pointer(text("from")?)
                    .ok_or(Refusal::DoesNotApply)?;
                // Measured before it is cloned: a copy of the whole state
                // into itself stops here once it would not fit.
                let room = self.room_for(path)?;
                let len = self.fit(source, room)?;
                let value = source.clone();
                self.insert(path, value, room, len)
            }
            "test" => {
                let found = self.value.pointer(path).ok_or(Refusal::DoesNotApply)?;
                (found == field("value")?)
                    .then_some(())
                    .ok_or(Refusal::DoesNotApply)
            }
            _ => Err(Refusal::DoesNotApply),
        }
    }

    /// Before adding at `path`: the size the document keeps (less the value
    /// the add replaces) and what a new member costs besides its value (its
    /// name, colon and comma; an item's comma).
    fn room_for(&self, path: &str) -> Result<(usize, usize), Refusal> {
        if path.is_empty() {
            return Ok((0, 0));
        }
        let (parent, token) = split(path).ok_or(Refusal::DoesNotApply)?;
        match self.value.pointer(parent) {
            Some(Value::Object(members)) => Ok(match members.get(&token) {
                Some(old) => {
                    let old_len = json_len(old, usize::MAX).unwrap_or(0);
                    (self.size.saturating_sub(old_len), 0)
                }
                None => (self.size, string_len(&token) + 2),
            }),
            Some(Value::Array(_)) => Ok((self.size, 1)),
            _ => Err(Refusal::DoesNotApply),
        }
    }

    /// `value`'s length, if it fits beside `room`.
    fn fit(&self, value: &Value, (kept, overhead): (usize, usize)) -> Result<usize, Refusal> {
        let left = self
            .limit
            .checked_sub(kept.saturating_add(overhead))
            .ok_or(Refusal::TooLarge)?;
        json_len(value, left).ok_or(Refusal::TooLarge)
    }

    /// Adds `value` (`len` bytes serialised, measured beside `room`) at
    /// `path`.
    fn insert(
        &mut self,
        path: &str,
        value: Value,
        (kept, overhead): (usize, usize),
        len: usize,
    ) -> Result<(), Refusal> {
        if path.is_empty() {
            self.value = value;
            self.size = len;
            return Ok(());
        }
        let (parent, token) = split(path).ok_or(Refusal::DoesNotApply)?;
        match self.value.pointer_mut(parent) {
            Some(Value::Object(members)) => {
                members.insert(token, value);
            }
            Some(Value::Array(items)) if token == "-" => items.push(value),
            Some(Value::Array(items)) => {
                let at = index(&token).ok_or(Refusal::DoesNotApply)?;
                if at > items.len() {
                    return Err(Refusal::DoesNotApply);
                }
                items.insert(at, value);
            }
            _ => return Err(Refusal::DoesNotApply),
        }
        self.size = kept + overhead + len;
        Ok(())
    }

    /// Removes what `path` names; the value and its serialised length. The
    /// size gives back the value and a member's name and colon, never more
    /// than the document loses (a comma may stay counted).
    fn remove(&mut self, path: &str) -> Result<(Value, usize), Refusal> {
        let (parent, token) = split(path).ok_or(Refusal::DoesNotApply)?;
        let (removed, name) = match self.value.pointer_mut(parent) {
            Some(Value::Object(members)) => (members.remove(&token), string_len(&token) + 1),
            Some(Value::Array(items)) => (
                index(&token)
                    .filter(|at| *at < items.len())
                    .map(|at| items.remove(at)),
                0,
            ),
            _ => (None, 0),
        };
        let removed = removed.ok_or(Refusal::DoesNotApply)?;
        let len = json_len(&removed, usize::MAX).unwrap_or(0);
        self.size = self.size.saturating_sub(len + name);
        Ok((removed, len))
    }
}

/// The parent of `path` and the last token, unescaped (RFC 6901).
fn split(path: &str) -> Option<(&str, String)> {
    let at = path.rfind('/')?;
    let token = path[at + 1..].replace("~1", "/").replace("~0", "~");
    Some((&path[..at], token))
}

/// An array index as RFC 6901 spells it: digits, no leading zero.
fn index(token: &str) -> Option<usize> {
    let canonical = token == "0" || (!token.starts_with('0') && !token.is_empty());
    if canonical && token.bytes().all(|b| b.is_ascii_digit()) {
        token.parse().ok()
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn patched(doc: Value, ops: Value) -> Option<Value> {
        super::patched(&doc, ops.as_array()?, MAX_SHARED_STATE_BYTES).ok()
    }

    #[test]
    fn a_patch_that_doubles_the_state_stops_at_the_bound() {
        // Each root copy doubles the state: 24 of them would be gigabytes.
        let ops: Vec<Value> = (0..24)
            .map(|k| json!({ "op": "copy", "from": "", "path": format!("/k{k}") }))
            .collect();
        let state = json!({ "seed": "x".repeat(1000) });
        assert_eq!(
            super::patched(&state, &ops, 1 << 20),
            Err(Refusal::TooLarge)
        );
        // The same through an added value that is then copied into itself.
        let ops: Vec<Value> =
            std::iter::once(json!({ "op": "add", "path": "/a", "value": [1, 2, 3] }))
                .chain((0..40).map(|_| json!({ "op": "copy", "from": "/a", "path": "/a/-" })))
                .collect();
        assert_eq!(
            super::patched(&json!({}), &ops, 1 << 20),
            Err(Refusal::TooLarge)
        );
        let many = vec![json!({ "op": "test", "path": "", "value": {} }); MAX_PATCH_OPS + 1];
        assert_eq!(
            super::patched(&json!({}), &many, 1 << 20),
            Err(Refusal::TooLarge)
        );
    }

    fn real(doc: &Value) -> usize {
        serde_json::to_vec(doc).unwrap().len()
    }

    fn path() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        prop_oneof![
            Just(String::new()),
            (0u8..4).prop_map(|k| format!("/k{k}")),
            (0u8..4, 0u8..3).prop_map(|(k, i)| format!("/k{k}/{i}")),
            (0u8..4).prop_map(|k| format!("/k{k}/-")),
        ]
    }

    fn op() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let value = prop_oneof![
            (0usize..300).prop_map(|n| json!("v".repeat(n))),
            (0usize..5).prop_map(|n| json!(vec![1; n])),
            Just(json!({ "a": { "b": [1, 2] } })),
        ];
        prop_oneof![
            (path(), value.clone())
                .prop_map(|(p, v)| json!({ "op": "add", "path": p, "value": v })),
            (path(), value).prop_map(|(p, v)| json!({ "op": "replace", "path": p, "value": v })),
            path().prop_map(|p| json!({ "op": "remove", "path": p })),
            (path(), path()).prop_map(|(f, p)| json!({ "op": "copy", "from": f, "path": p })),
            (path(), path()).prop_map(|(f, p)| json!({ "op": "move", "from": f, "path": p })),
        ]
    }

    proptest::proptest! {
        /// The bound refuses only what would really pass it: a patch whose
        /// every step stays under the limit (less one byte an operation the
        /// running size may over-count) applies as it does unbounded, and
        /// the running size is never below the real one.
        #[test]
        fn the_bound_refuses_only_what_passes_it(
            ops in proptest::collection::vec(op(), 1..24),
            limit in 64usize..4096,
        ) {
            let start = json!({ "k0": [1, 2, 3], "k1": "x" });
            // Unbounded, step by step: the largest state on the way.
            let mut doc = Document { value: start.clone(), size: real(&start), limit: usize::MAX };
            let mut peak = real(&start);
            let mut applies = true;
            for op in &ops {
                if doc.apply(op).is_err() {
                    applies = false;
                    break;
                }
                proptest::prop_assert!(doc.size >= real(&doc.value), "{op}");
                peak = peak.max(real(&doc.value));
            }
            let bounded = super::patched(&start, &ops, limit);
            if let Ok(value) = &bounded {
                proptest::prop_assert!(real(value) <= limit);
            }
            if applies && peak + ops.len() <= limit {
                proptest::prop_assert_eq!(bounded, Ok(doc.value));
            }
        }
    }

    #[test]
    fn the_running_size_never_falls_below_the_real_one() {
        let ops = json!([
            { "op": "add", "path": "/a", "value": { "b": [1, 2, 3], "c": "text" } },
            { "op": "copy", "from": "/a", "path": "/d" },
            { "op": "move", "from": "/d/b", "path": "/e" },
            { "op": "replace", "path": "/a/c", "value": "longer text" },
            { "op": "remove", "path": "/a/b/0" },
            { "op": "add", "path": "/e/1", "value": null },
        ]);
        let mut doc = Document {
            value: json!({}),
            size: 2,
            limit: 1 << 20,
        };
        for op in ops.as_array().unwrap() {
            doc.apply(op).unwrap();
            let real = serde_json::to_vec(&doc.value).unwrap().len();
            assert!(doc.size >= real, "{op}: {} < {real}", doc.size);
        }
    }

    #[test]
    fn a_move_to_a_sibling_that_shares_a_prefix_applies() {
        let moved = patched(
            json!({ "a": 1 }),
            json!([{ "op": "move", "from": "/a", "path": "/ab" }]),
        );
        assert_eq!(moved, Some(json!({ "ab": 1 })));
    }

    #[test]
    fn every_operation_applies_as_rfc_6902_says() {
        let doc = json!({ "a": { "b": [1, 2] }, "c/d": 1, "e~f": 2 });
        assert_eq!(
            patched(
                doc.clone(),
                json!([
                    { "op": "add", "path": "/a/b/1", "value": 9 },
                    { "op": "add", "path": "/a/b/-", "value": 3 },
                    { "op": "remove", "path": "/c~1d" },
                    { "op": "replace", "path": "/e~0f", "value": 3 },
                    { "op": "copy", "from": "/a/b", "path": "/g" },
                    { "op": "move", "from": "/g", "path": "/h" },
                    { "op": "test", "path": "/h/0", "value": 1 }
                ])
            ),
            Some(json!({ "a": { "b": [1, 9, 2, 3] }, "e~f": 3, "h": [1, 9, 2, 3] }))
        );
        for bad in [
            json!([{ "op": "remove", "path": "/missing" }]),
            json!([{ "op": "replace", "path": "/missing", "value": 1 }]),
            json!([{ "op": "add", "path": "/a/b/7", "value": 1 }]),
            json!([{ "op": "add", "path": "/a/b/01", "value": 1 }]),
            json!([{ "op": "test", "path": "/c~1d", "value": 2 }]),
            json!([{ "op": "move", "from": "/a", "path": "/a/x" }]),
            json!([{ "op": "move", "from": "/missing", "path": "/x" }]),
            json!([{ "op": "jump", "path": "/a" }]),
        ] {
            assert_eq!(patched(doc.clone(), bad.clone()), None, "{bad}");
        }
    }
}
