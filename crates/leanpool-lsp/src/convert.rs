//! JSON rewriting between the editor's view of a document and the
//! worker's: URIs and versions only (positions are never touched: the
//! worker holds the editor's exact text).

use leanpool_protocol::Range;
use leanpool_screen::LineIndex;
use serde_json::Value;

/// The document a request or notification is about: `textDocument.uri`,
/// else a top-level `uri` (`$/lean/rpc/connect`, `keepAlive`, `release`).
pub fn request_uri(params: &Value) -> Option<String> {
    params
        .get("textDocument")
        .and_then(|t| t.get("uri"))
        .or_else(|| params.get("uri"))
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// Replaces every string equal to `from` by `to`, anywhere in `v`.
pub fn replace_uri(v: &mut Value, from: &str, to: &str) {
    match v {
        Value::String(s) if s == from => *s = to.to_string(),
        Value::Array(a) => a.iter_mut().for_each(|x| replace_uri(x, from, to)),
        Value::Object(m) => m.values_mut().for_each(|x| replace_uri(x, from, to)),
        _ => {}
    }
}

/// Adds `delta` to the integer at `path` (e.g. `["textDocument", "version"]`)
/// if there is one.
pub fn shift_version(v: &mut Value, path: &[&str], delta: i64) -> Option<i64> {
    let mut cur = v;
    for p in path {
        cur = cur.get_mut(*p)?;
    }
    let n = cur.as_i64()? + delta;
    *cur = Value::from(n);
    Some(n)
}

/// An editor's `contentChanges` that cannot be applied (the document's
/// text is then no longer known).
#[derive(Debug, thiserror::Error)]
pub enum BadChange {
    #[error("contentChanges is not an array")]
    NotArray,
    #[error("a content change without text")]
    NoText,
    #[error("bad range: {0}")]
    Range(serde_json::Error),
    #[error("a change range ends before it starts")]
    Backwards,
}

/// Applies the editor's `contentChanges` (LSP: full text when a change
/// has no range; UTF-16 ranges otherwise, applied in order) to `text`.
pub fn apply_changes(text: &mut String, changes: &Value) -> Result<(), BadChange> {
    let arr = changes.as_array().ok_or(BadChange::NotArray)?;
    for c in arr {
        let new = c
            .get("text")
            .and_then(Value::as_str)
            .ok_or(BadChange::NoText)?;
        match c.get("range").filter(|r| !r.is_null()) {
            None => *text = new.to_string(),
            Some(r) => {
                let range: Range = serde_json::from_value(r.clone()).map_err(BadChange::Range)?;
                if range.end < range.start {
                    return Err(BadChange::Backwards);
                }
                let index = LineIndex::new(text);
                let (start, end) = (index.offset(range.start), index.offset(range.end));
                text.replace_range(start..end.max(start), new);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn incremental_changes_use_utf16_columns() {
        let mut t = "a ∀ 𝔸 b\nsecond\n".to_string();
        // 𝔸 is two UTF-16 units: columns 4..6; replace `b` at 7..8.
        let ch = json!([{ "range": { "start": {"line": 0, "character": 7}, "end": {"line": 0, "character": 8} }, "text": "c" }]);
        apply_changes(&mut t, &ch).unwrap();
        assert_eq!(t, "a ∀ 𝔸 c\nsecond\n");
        let ch = json!([
            { "range": { "start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 6} }, "text": "2nd" },
            { "text": "whole" },
            { "range": { "start": {"line": 0, "character": 5}, "end": {"line": 0, "character": 5} }, "text": "!" }
        ]);
        apply_changes(&mut t, &ch).unwrap();
        assert_eq!(t, "whole!");
    }

    #[test]
    fn bad_changes_are_errors_not_panics() {
        let mut t = "abc".to_string();
        assert!(apply_changes(&mut t, &json!({})).is_err());
        assert!(apply_changes(&mut t, &json!([{ "range": null }])).is_err());
        let back = json!([{ "range": { "start": {"line": 0, "character": 2}, "end": {"line": 0, "character": 1} }, "text": "" }]);
        assert!(apply_changes(&mut t, &back).is_err());
        // Past the end clamps, as LineIndex does.
        let far = json!([{ "range": { "start": {"line": 9, "character": 0}, "end": {"line": 99, "character": 9} }, "text": "!" }]);
        apply_changes(&mut t, &far).unwrap();
        assert_eq!(t, "abc!");
    }

    #[test]
    fn uris_and_versions_rewritten() {
        let mut v = json!({ "textDocument": { "uri": "file:///w/Doc.lean", "version": 7 }, "x": ["file:///w/Doc.lean", "other"] });
        replace_uri(&mut v, "file:///w/Doc.lean", "file:///home/a.lean");
        assert_eq!(request_uri(&v).as_deref(), Some("file:///home/a.lean"));
        assert_eq!(v["x"][1], "other");
        assert_eq!(
            shift_version(&mut v, &["textDocument", "version"], -5),
            Some(2)
        );
        assert_eq!(shift_version(&mut v, &["nope"], 1), None);
    }
}
