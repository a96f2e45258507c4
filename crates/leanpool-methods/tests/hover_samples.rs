//! The hover-per-character tree builder on real recorded Lean + Mathlib
//! hover answers: it must recover exactly the node ranges and the tree the
//! GTED paper built from the same answers.

use leanpool_methods::terms::build::normalize_label;
use leanpool_methods::terms::hover::{parse_sample, ranges_within, tree_from_ranges, HoverAnswer};
use leanpool_protocol::{GtedNode, Node, Position, Range};
use serde_json::Value;
use std::collections::BTreeSet;

fn fixture(rel: &str) -> String {
    let p = format!("{}/tests/fixtures/{rel}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

/// The source text (rebuilt from the per-character records) and answers.
fn load(n: u32) -> (String, Vec<HoverAnswer>) {
    let mut lines: Vec<String> = Vec::new();
    let mut answers = Vec::new();
    for l in fixture(&format!("hover-samples/label_code_{n}.jsonl")).lines() {
        let v: Value = serde_json::from_str(l).unwrap();
        let (ch, a) = parse_sample(&v).unwrap();
        let row = a.at.line as usize;
        while lines.len() <= row {
            lines.push(String::new());
        }
        lines[row].push(ch);
        answers.push(a);
    }
    (lines.join("\n"), answers)
}

/// The paper's node ranges for the statement.
fn paper_ranges(n: u32) -> BTreeSet<Range> {
    fixture(&format!("paper-ast/label_code_{n}.processed.jsonl"))
        .lines()
        .flat_map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            v.as_object()
                .unwrap()
                .values()
                .map(|r| {
                    let p = |x: &Value| Position {
                        line: x[0].as_u64().unwrap() as u32,
                        character: x[1].as_u64().unwrap() as u32,
                    };
                    Range {
                        start: p(&r[0]),
                        end: p(&r[1]),
                    }
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

fn squash_tree(g: &GtedNode) -> GtedNode {
    GtedNode {
        content: normalize_label(&g.content),
        children: g.children.iter().map(squash_tree).collect(),
        variable_freecost: false,
        hypothesis_freecost: false,
    }
}

#[test]
fn recovers_the_papers_ranges_and_trees() {
    for n in [1u32, 2, 63, 100] {
        let (text, answers) = load(n);
        let want = paper_ranges(n);
        let lo = want.iter().map(|r| r.start).min().unwrap();
        let hi = want.iter().map(|r| r.end).max().unwrap();
        let got = ranges_within(&answers, lo, hi);
        // The paper dropped parenthesis ranges, which our builder treats
        // as transparent; everything else must be identical.
        let idx = leanpool_screen::LineIndex::new(&text);
        let got_no_parens: BTreeSet<Range> = got
            .iter()
            .copied()
            .filter(|r| !text[idx.offset(r.start)..].starts_with('(') || want.contains(r))
            .collect();
        // The paper also folded application heads (`f _`) into labels, as
        // the tree builder does; every range of theirs must be ours.
        assert!(want.is_subset(&got_no_parens), "label_code_{n}");
        let tree: Node = tree_from_ranges(&text, &got, &answers);
        let paper: GtedNode =
            serde_json::from_str(&fixture(&format!("paper-ast/label_code_{n}.json"))).unwrap();
        assert_eq!(
            squash_tree(&GtedNode::from(&tree)),
            squash_tree(&paper),
            "label_code_{n}"
        );
    }
}
