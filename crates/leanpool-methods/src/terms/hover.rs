//! The baseline: GTED's "one hover per character" tree, done right.
//!
//! The paper's pipeline sends `textDocument/hover` at every character of
//! the statement and nests the ranges of the answers into a tree: a range
//! with sub-ranges is an operator (its source text with `_` for each
//! sub-range), a range without is an atom. It costs one sequential round
//! trip per character (350-460 per miniF2F statement). It is kept here
//! for the bench (`benches/src/opt.rs`) and as a check on recorded data
//! (`hover-samples/`). Unlike the paper's code, positions are UTF-16
//! (`LineIndex`), so characters such as `𝓝` do not cut the tree.

use crate::terms::build::{normalize_label, squash_ws};
use leanpool_lean::{Worker, WorkerError};
use leanpool_protocol::{Node, NodeKind, Position, Range};
use leanpool_screen::LineIndex;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::time::Duration;

/// One hover answer: where it was asked and what range/contents came back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HoverAnswer {
    /// Where the hover was asked.
    pub at: Position,
    /// The range Lean's answer covers.
    pub range: Option<Range>,
    /// The answer's text.
    pub contents: Option<String>,
}

fn pos_of(v: &Value) -> Option<Position> {
    Some(Position {
        line: v.get("line")?.as_u64()? as u32,
        character: v.get("character")?.as_u64()? as u32,
    })
}

/// Reads an LSP `Hover` (or `null`) asked at `at`.
pub fn parse_hover(at: Position, v: &Value) -> HoverAnswer {
    let range = v.get("range").and_then(|r| {
        Some(Range {
            start: pos_of(r.get("start")?)?,
            end: pos_of(r.get("end")?)?,
        })
    });
    let contents = v.get("contents").and_then(|c| {
        c.get("value")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| c.as_str().map(str::to_owned))
    });
    HoverAnswer {
        at,
        range,
        contents,
    }
}

/// Reads one line of the recorded samples
/// (`{"character", "row", "column", "range"?, "contents"?}`).
pub fn parse_sample(v: &Value) -> Option<(char, HoverAnswer)> {
    let ch = v.get("character")?.as_str()?.chars().next()?;
    let at = Position {
        line: v.get("row")?.as_u64()? as u32,
        character: v.get("column")?.as_u64()? as u32,
    };
    Some((ch, parse_hover(at, v)))
}

/// Sends one hover per character of `text[from..to]` (UTF-16 positions of
/// the current document `text`), sequentially, as the paper does.
pub async fn hover_each_char(
    worker: &mut Worker,
    text: &str,
    from: usize,
    to: usize,
    timeout: Duration,
) -> Result<Vec<HoverAnswer>, WorkerError> {
    let idx = LineIndex::new(text);
    let mut out = Vec::new();
    for (i, c) in text[from..to].char_indices() {
        if c == '\n' {
            continue;
        }
        let at = idx.position(from + i);
        let params = json!({
            "textDocument": { "uri": worker.uri() },
            "position": { "line": at.line, "character": at.character },
        });
        let v = worker
            .request("textDocument/hover", params, timeout)
            .await?;
        out.push(parse_hover(at, &v));
    }
    Ok(out)
}

/// Distinct answer ranges lying within `[lo, hi]`.
pub fn ranges_within(answers: &[HoverAnswer], lo: Position, hi: Position) -> Vec<Range> {
    let set: BTreeSet<Range> = answers
        .iter()
        .filter(|a| a.contents.as_deref().is_some_and(|c| !c.trim().is_empty()))
        .filter_map(|a| a.range)
        .filter(|r| r.start >= lo && r.end <= hi && r.start < r.end)
        .collect();
    set.into_iter().collect()
}

/// The hover tree of `text` from the given ranges: root `theorem`, ranges
/// nested by containment (ties and partial overlaps dropped: first wins).
/// An atom whose hover shows `name : type` for its own text is a local
/// (marked `BoundVar`), as the paper marks variables.
pub fn tree_from_ranges(text: &str, ranges: &[Range], answers: &[HoverAnswer]) -> Node {
    let idx = LineIndex::new(text);
    let mut spans: Vec<(usize, usize)> = ranges
        .iter()
        .map(|r| (idx.offset(r.start), idx.offset(r.end)))
        .collect();
    // Outer first: by start ascending, then end descending.
    spans.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    spans.dedup();
    let locals = hover_locals(answers);
    // Build a forest by a stack walk over the sorted spans.
    let mut forest = Vec::new();
    for s in spans {
        insert(&mut forest, s);
    }
    Node::op(
        "theorem",
        forest.iter().map(|t| to_node(t, text, &locals)).collect(),
    )
}

/// The names whose hover shows `name : type`: the locals.
fn hover_locals(answers: &[HoverAnswer]) -> BTreeSet<String> {
    answers
        .iter()
        .filter_map(|a| a.contents.as_deref())
        .filter_map(|c| c.strip_prefix("```lean\n"))
        .filter_map(|c| c.split_once(" : ").map(|(n, _)| n.trim().to_owned()))
        .filter(|n| !n.is_empty() && !n.contains(' '))
        .collect()
}

/// A range of the text (byte offsets) and the ranges nested in it.
struct Nested {
    span: (usize, usize),
    kids: Vec<Nested>,
}

/// Places `s` (sorted outer first) in the forest: inside the last range
/// that contains it, dropped on a partial overlap.
fn insert(into: &mut Vec<Nested>, s: (usize, usize)) {
    if let Some(last) = into.last_mut() {
        if s.0 >= last.span.0 && s.1 <= last.span.1 {
            return insert(&mut last.kids, s);
        }
        if s.0 < last.span.1 {
            return; // partial overlap: not a tree
        }
    }
    into.push(Nested {
        span: s,
        kids: vec![],
    });
}

/// The operator tree of one nested range: a leaf is an atom (a local
/// marked `BoundVar`), an inner range an operator labelled by its text
/// with each child's range replaced by `_`.
fn to_node(t: &Nested, text: &str, locals: &BTreeSet<String>) -> Node {
    if t.kids.is_empty() {
        let label = squash_ws(&text[t.span.0..t.span.1]);
        return if locals.contains(&label) {
            Node {
                label,
                kind: NodeKind::BoundVar,
                scope: None,
                binder: None,
                children: vec![],
            }
        } else {
            Node::atom(label)
        };
    }
    // `f x y`: an application's head is an atom range at the start
    // followed by whitespace; it belongs to the operator (`f _ _`),
    // as in the paper's trees and in `Nat.gcd _ _`.
    let head = t.kids.len() >= 2
        && t.kids[0].kids.is_empty()
        && t.kids[0].span.0 == t.span.0
        && text[t.kids[0].span.1..t.kids[1].span.0]
            .chars()
            .all(char::is_whitespace);
    let kids: Vec<&Nested> = t.kids.iter().skip(usize::from(head)).collect();
    let mut label = String::new();
    let mut at = t.span.0;
    for k in &kids {
        label.push_str(&text[at..k.span.0]);
        label.push('_');
        at = k.span.1;
    }
    label.push_str(&text[at..t.span.1]);
    let label = normalize_label(&label);
    if label == "_" {
        // A parenthesized term: its range adds nothing.
        return to_node(kids[0], text, locals);
    }
    Node::op(
        label,
        kids.iter().map(|k| to_node(k, text, locals)).collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_and_labels() {
        let text = "theorem t (a : Nat) : a + 1 = 1 + a := sorry";
        let r = |s: u32, e: u32| Range {
            start: Position {
                line: 0,
                character: s,
            },
            end: Position {
                line: 0,
                character: e,
            },
        };
        // (a : Nat), a, Nat, a + 1 = 1 + a, a + 1, a, 1, 1 + a, 1, a
        let ranges = vec![
            r(10, 19),
            r(11, 12),
            r(15, 18),
            r(22, 35),
            r(22, 27),
            r(22, 23),
            r(26, 27),
            r(30, 35),
            r(30, 31),
            r(34, 35),
        ];
        let ans = vec![HoverAnswer {
            at: Position {
                line: 0,
                character: 11,
            },
            range: Some(r(11, 12)),
            contents: Some("```lean\na : Nat\n```".into()),
        }];
        let t = tree_from_ranges(text, &ranges, &ans);
        assert_eq!(t.children.len(), 2);
        assert_eq!(t.children[0].label, "_ : _");
        assert_eq!(t.children[0].children[0].kind, NodeKind::BoundVar);
        assert_eq!(t.children[1].label, "_ = _");
        assert_eq!(t.children[1].children[0].label, "_ + _");
        assert_eq!(
            t.children[1].children[1].children[1].kind,
            NodeKind::BoundVar
        );
    }
}
