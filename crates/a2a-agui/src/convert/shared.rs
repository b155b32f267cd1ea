//! The client's shared state, as far as this run knows it: the state the
//! client sent (`Options::state`), then every snapshot and patch the agent
//! sent. A 1.0 client gets patches as `STATE_DELTA`; an older one whose
//! state is known gets the patched state as `STATE_SNAPSHOT` instead,
//! because `@ag-ui/client` 0.0.48 cannot apply any patch ("applyPatch is
//! not a function") and a snapshot means the same to every version.

use serde_json::Value;

use super::Converter;
use crate::convert::AguiVersion;
use crate::custom::{Custom, ErrorNotice};
use crate::event::{Event, Patch};
use crate::ids::IdSource;

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
    serde_json::to_vec(state).is_ok_and(|bytes| bytes.len() <= MAX_SHARED_STATE_BYTES)
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
        let mut next = state.clone();
        if !ops.iter().all(|op| apply(&mut next, op).is_some()) {
            // It fails on the client's state as well (the same state): say
            // so instead of sending what no client can apply.
            return out.push(Event::Custom(Custom::Error(ErrorNotice {
                message: Some(
                    "the agent's state patch does not apply to the shared state".to_owned(),
                ),
                code: Some("STATE_PATCH_FAILED".to_owned()),
            })));
        }
        out.push(Event::StateSnapshot {
            snapshot: next.clone(),
        });
        self.shared_state = Some(next).filter(within_bound);
    }
}

/// Applies one RFC 6902 operation; `None` when it does not apply.
fn apply(doc: &mut Value, op: &Value) -> Option<()> {
    let path = op.get("path")?.as_str()?;
    match op.get("op")?.as_str()? {
        "add" => add(doc, path, op.get("value")?.clone()),
        "remove" => remove(doc, path).map(drop),
        "replace" => {
            let value = op.get("value")?.clone();
            *doc.pointer_mut(path)? = value;
            Some(())
        }
        "move" => {
            let from = op.get("from")?.as_str()?;
            if path
                .strip_prefix(from)
                .is_some_and(|rest| rest.starts_with('/'))
            {
                return None; // into its own child
            }
            let value = remove(doc, from)?;
            add(doc, path, value)
        }
        "copy" => {
            let value = doc.pointer(op.get("from")?.as_str()?)?.clone();
            add(doc, path, value)
        }
        "test" => (doc.pointer(path)? == op.get("value")?).then_some(()),
        _ => None,
    }
}

/// The parent of `path` and the last token, unescaped (RFC 6901).
fn split(path: &str) -> Option<(&str, String)> {
    let at = path.rfind('/')?;
    let token = path[at + 1..].replace("~1", "/").replace("~0", "~");
    Some((&path[..at], token))
}

fn add(doc: &mut Value, path: &str, value: Value) -> Option<()> {
    if path.is_empty() {
        *doc = value;
        return Some(());
    }
    let (parent, token) = split(path)?;
    match doc.pointer_mut(parent)? {
        Value::Object(members) => {
            members.insert(token, value);
            Some(())
        }
        Value::Array(items) if token == "-" => {
            items.push(value);
            Some(())
        }
        Value::Array(items) => {
            let at = index(&token)?;
            (at <= items.len()).then(|| items.insert(at, value))
        }
        _ => None,
    }
}

fn remove(doc: &mut Value, path: &str) -> Option<Value> {
    let (parent, token) = split(path)?;
    match doc.pointer_mut(parent)? {
        Value::Object(members) => members.remove(&token),
        Value::Array(items) => {
            let at = index(&token)?;
            (at < items.len()).then(|| items.remove(at))
        }
        _ => None,
    }
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

    fn patched(mut doc: Value, ops: Value) -> Option<Value> {
        for op in ops.as_array()? {
            apply(&mut doc, op)?;
        }
        Some(doc)
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
