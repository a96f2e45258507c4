//! Operator trees from Lean's tagged pretty-printer output.
//!
//! The delaborator annotates every subterm it prints with its
//! [`SubexprPos`], so the nesting of tags *is* the term's structure: a tag
//! whose body holds text and child tags is an operator application, the
//! text pieces between the children are the operator's notation, and a
//! tag with text only is an atom. Nothing here parses pretty-printed text:
//! structure comes from tags and positions, text only supplies labels.
//!
//! ## Labels
//! An inner node's label is its text pieces with `_` for each child, then
//! normalized: the characters `(` and `)` are removed (the parenthesizer
//! adds them between a parent's text and a child, so `a * (b + c)` gives
//! `_ * (_)` before and `_ * _` after), every run of whitespace (Lean
//! breaks lines at width 120 and indents) becomes one space, and the ends
//! are trimmed. So `Nat.gcd a b` → `Nat.gcd _ _`, `a + c < b + c` →
//! `_ < _` over two `_ + _`. A tag whose only content is one child plus
//! parentheses/whitespace is transparent.
//!
//! ## Binders and scopes
//! Binding sites (the `x` of `∀ (x : α), p`, `∃ x, p`, `fun x => t`,
//! `{x | p}`, `∑ x ∈ s, f x`) are text-only identifier children in the
//! shape of a binder list, and not at a plausible subterm position (see
//! `find_binders` for why positions alone cannot say it: Lean tags
//! binder names with "extra" positions that serialize ambiguously). A
//! group's type is the child after ` : `; its kind is the bracket pair
//! around it (`(…)` explicit, `{…}` implicit, `⦃…⦄` strict implicit,
//! `[…]` instance; none: explicit). A binder is in scope in the types of
//! later groups of the same construct and from the body (the child after
//! the separator `,` / `=>` / `↦` / `|`) on, so in `∑ i ∈ s, f i` the set
//! `s` is outside the scope of `i`. This covers Mathlib's notations as
//! well as core's without knowing any of them.
//!
//! Every binding site gets a fresh scope id (pre-order: statement binders
//! first, then inner binders in printing order) and becomes a binder node
//! (label by kind: `(_ : _)`, `{_ : _}`, `⦃_ : _⦄`, `[_ : _]`, or without
//! ` : _` when no type is printed) whose children are the bound name leaf
//! and the type tree. Its place in the parent's label is one `_`:
//! `∀ (c : Nat), body` → `∀ _, _`. Grouped binders (`∀ (a b : Nat), p`,
//! `∃ x y, p`) are split into nested nodes, one binder each, so grouping
//! (a printing choice) never changes the tree.
//!
//! Occurrences: an atom whose text is a name in scope is that variable
//! (innermost binding wins). This is exact because the delaborator picks
//! printed names so that the output reads back to the same term: it
//! renames a binder whose name would capture (`getUnusedName`), marks
//! inaccessible names with `✝`, and prints a shadowed constant qualified.
//! The RPC references in the tags would identify fvars too, but reading
//! them costs one request per occurrence.

use crate::terms::tagged::{SubexprPos, Tagged};
use leanpool_protocol::{BinderKind, Node, NodeKind};
use std::collections::{HashMap, HashSet};

mod sites;

use sites::{find_binders, is_body_separator};

/// One name in scope while building.
#[derive(Debug, Clone)]
struct ScopeEntry {
    name: String,
    id: u32,
    kind: NodeKind,
}

/// Builds trees; owns the scope-id counter so ids are unique per tree.
#[derive(Debug, Default)]
pub struct TreeBuilder {
    next_id: u32,
    stack: Vec<ScopeEntry>,
}

enum Piece<'a> {
    Text(String),
    Child(Option<SubexprPos>, &'a Tagged),
}

fn flatten<'a>(t: &'a Tagged, out: &mut Vec<Piece<'a>>) {
    match t {
        Tagged::Text(s) => {
            if let Some(Piece::Text(prev)) = out.last_mut() {
                prev.push_str(s);
            } else {
                out.push(Piece::Text(s.clone()));
            }
        }
        Tagged::Append(xs) => xs.iter().for_each(|x| flatten(x, out)),
        Tagged::Tag(v, body) => out.push(Piece::Child(SubexprPos::of_tag(v), body)),
    }
}

fn is_text_only(t: &Tagged) -> bool {
    match t {
        Tagged::Text(_) => true,
        Tagged::Append(xs) => xs.iter().all(is_text_only),
        Tagged::Tag(..) => false,
    }
}

/// Collapses whitespace runs to one space and trims.
pub fn squash_ws(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Label normalization for inner nodes (see module docs).
pub fn normalize_label(s: &str) -> String {
    squash_ws(&s.replace(['(', ')'], " ")).replace("_ ,", "_,")
}

/// Label of a binder node.
pub fn binder_label(kind: BinderKind, typed: bool) -> String {
    let (l, r) = match kind {
        BinderKind::Default => ("(", ")"),
        BinderKind::Implicit => ("{", "}"),
        BinderKind::StrictImplicit => ("⦃", "⦄"),
        BinderKind::InstImplicit => ("[", "]"),
    };
    if typed {
        format!("{l}_ : _{r}")
    } else {
        format!("{l}_{r}")
    }
}

const OPENERS: &[char] = &['(', '{', '⦃', '['];
const CLOSERS: &[char] = &[')', '}', '⦄', ']'];

/// A piece of a binder-bearing node while its label is assembled.
enum Part {
    Text(String),
    Binders(Vec<Node>),
    Child(Node),
}

struct BinderSite {
    /// Piece index of the name (of the type, for an anonymous instance).
    piece: usize,
    /// `None`: an anonymous instance binder, `[Inhabited α]`.
    name: Option<String>,
    kind: BinderKind,
    /// The group sits in brackets, which belong to the binder, not the label.
    bracketed: bool,
    /// Piece index of the type child, if printed.
    ty: Option<usize>,
}

impl TreeBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Allocates the next scope id and returns the leaf for the binding
    /// site; the name is *not* yet in scope (see [`Self::push_scope`]).
    pub fn fresh(&mut self, name: &str, kind: NodeKind) -> (Node, u32) {
        let id = self.next_id;
        self.next_id += 1;
        let leaf = Node {
            label: name.to_owned(),
            kind,
            scope: Some(id),
            binder: None,
            children: vec![],
        };
        (leaf, id)
    }

    /// Puts `name` (bound by scope `id`) in scope for what follows.
    pub fn push_scope(&mut self, name: &str, id: u32, kind: NodeKind) {
        self.stack.push(ScopeEntry {
            name: name.to_owned(),
            id,
            kind,
        });
    }

    /// Tree of one `CodeWithInfos`.
    pub fn term(&mut self, t: &Tagged) -> Node {
        match t {
            Tagged::Tag(v, body) => self.tag(SubexprPos::of_tag(v), body),
            other => self.tag(None, other),
        }
    }

    fn leaf(&self, text: &str) -> Node {
        let label = squash_ws(text);
        if let Some(e) = self.stack.iter().rev().find(|e| e.name == label) {
            return Node {
                label,
                kind: e.kind,
                scope: Some(e.id),
                binder: None,
                children: vec![],
            };
        }
        Node::atom(label)
    }

    fn tag(&mut self, pos: Option<SubexprPos>, body: &Tagged) -> Node {
        let mut pieces = Vec::new();
        flatten(body, &mut pieces);
        let children: Vec<usize> = (0..pieces.len())
            .filter(|&i| matches!(pieces[i], Piece::Child(..)))
            .collect();
        if children.is_empty() {
            return self.leaf(&body.strip_tags());
        }
        if children.len() == 1 {
            let only_decoration = pieces.iter().all(|p| match p {
                Piece::Text(s) => s.chars().all(|c| c.is_whitespace() || c == '(' || c == ')'),
                Piece::Child(..) => true,
            });
            if only_decoration {
                let Piece::Child(p, b) = &pieces[children[0]] else {
                    unreachable!()
                };
                return self.tag(p.clone(), b);
            }
        }
        let sites = find_binders(&pieces, pos.as_ref());
        if sites.is_empty() {
            let mut label = String::new();
            let mut kids = Vec::new();
            for p in &pieces {
                match p {
                    Piece::Text(s) => label.push_str(s),
                    Piece::Child(cp, b) => {
                        label.push('_');
                        kids.push(self.tag(cp.clone(), b));
                    }
                }
            }
            return Node::op(normalize_label(&label), kids);
        }
        self.binder_node(&pieces, sites)
    }

    /// A node with binding sites: its pieces become parts (text, binder
    /// runs, other children), runs separated by whitespace merge, and the
    /// parts become one node, or a nest of one-binder nodes.
    fn binder_node(&mut self, pieces: &[Piece<'_>], sites: Vec<BinderSite>) -> Node {
        let parts = self.binder_parts(pieces, &sites);
        let merged = merge_binder_runs(parts);
        let runs = merged
            .iter()
            .filter(|p| matches!(p, Part::Binders(_)))
            .count();
        let others = merged
            .iter()
            .filter(|p| matches!(p, Part::Child(_)))
            .count();
        if runs == 1 && sites.len() > 1 && others == 1 {
            // `Q a b, body` is `Q a, Q b, body`: nest, one binder per node.
            return nest_binders(merged);
        }
        flat_binder_node(merged)
    }

    /// Walks the pieces in order: text without the groups' brackets,
    /// binder nodes for each group (in scope from the next group's type
    /// on), other children built with this node's binders in scope from
    /// the body on.
    fn binder_parts(&mut self, pieces: &[Piece<'_>], sites: &[BinderSite]) -> Vec<Part> {
        let layout = BinderLayout::new(pieces, sites);
        // Binders of this node already built.
        let mut active: Vec<ScopeEntry> = Vec::new();
        let mut parts: Vec<Part> = Vec::new();
        let mut i = 0;
        while i < pieces.len() {
            match &pieces[i] {
                Piece::Text(s) => {
                    parts.push(Part::Text(layout.strip_brackets(sites, i, s).to_owned()));
                    i += 1;
                }
                Piece::Child(cp, b) => match layout.name_at.get(&i) {
                    None => {
                        let in_scope = i >= layout.body_start;
                        let node = self.with_entries(if in_scope { &active } else { &[] }, |me| {
                            me.tag(cp.clone(), b)
                        });
                        parts.push(Part::Child(node));
                        i += 1;
                    }
                    Some(&k) => {
                        let (nodes, next) = self.binder_group(pieces, sites, k, &mut active);
                        parts.push(Part::Binders(nodes));
                        i = next;
                    }
                },
            }
        }
        parts
    }

    /// The binder nodes of the group that starts at site `k` (one per
    /// name, each with the group's type tree; one `[_]` node for an
    /// anonymous instance binder), its names added to `active`; and the
    /// piece index after the group.
    fn binder_group(
        &mut self,
        pieces: &[Piece<'_>],
        sites: &[BinderSite],
        k: usize,
        active: &mut Vec<ScopeEntry>,
    ) -> (Vec<Node>, usize) {
        let group = group_at(pieces, sites, k);
        // Pre-order ids: the group's names, then binders inside its type.
        let leaves: Vec<(Node, u32)> = group
            .iter()
            .filter_map(|&g| sites[g].name.as_deref())
            .map(|name| self.fresh(name, NodeKind::BoundVar))
            .collect();
        let ty_tree = sites[k].ty.map(|tp| {
            let Piece::Child(tpos, tb) = &pieces[tp] else {
                unreachable!()
            };
            self.with_entries(active, |me| me.tag(tpos.clone(), tb))
        });
        if sites[k].name.is_none() {
            let node = Node {
                label: "[_]".to_owned(),
                kind: NodeKind::Op,
                scope: None,
                binder: Some(BinderKind::InstImplicit),
                children: ty_tree.into_iter().collect(),
            };
            return (vec![node], sites[k].piece + 1);
        }
        let mut nodes = Vec::new();
        for (&g, (leaf, id)) in group.iter().zip(leaves) {
            let site = &sites[g];
            let mut kids = vec![leaf.clone()];
            kids.extend(ty_tree.clone());
            nodes.push(Node {
                label: binder_label(site.kind, ty_tree.is_some()),
                kind: NodeKind::Op,
                scope: None,
                binder: Some(site.kind),
                children: kids,
            });
            active.push(ScopeEntry {
                name: leaf.label,
                id,
                kind: NodeKind::BoundVar,
            });
        }
        let last = &sites[*group.last().expect("non-empty")];
        (nodes, last.ty.unwrap_or(last.piece) + 1)
    }

    /// Builds with `entries` pushed in scope.
    fn with_entries<T>(&mut self, entries: &[ScopeEntry], f: impl FnOnce(&mut Self) -> T) -> T {
        let base = self.stack.len();
        self.stack.extend(entries.iter().cloned());
        let r = f(self);
        self.stack.truncate(base);
        r
    }
}

/// Where the binding sites of a node are among its pieces.
struct BinderLayout {
    /// Piece index of each site's name (type, for an anonymous instance)
    /// -> the site's index.
    name_at: HashMap<usize, usize>,
    /// Piece index ending each bracketed group (its type, else its last name).
    bracket_ends: HashSet<usize>,
    /// The body starts after the first separator following the binders.
    body_start: usize,
}

impl BinderLayout {
    fn new(pieces: &[Piece<'_>], sites: &[BinderSite]) -> Self {
        let name_at = sites
            .iter()
            .enumerate()
            .map(|(k, s)| (s.piece, k))
            .collect();
        let bracket_ends = sites
            .iter()
            .enumerate()
            .filter(|(k, s)| {
                s.bracketed
                    && sites
                        .get(k + 1)
                        .is_none_or(|n| n.ty != s.ty || n.ty.is_none())
            })
            .map(|(_, s)| s.ty.unwrap_or(s.piece))
            .collect();
        let last_group_end = sites
            .iter()
            .map(|s| s.ty.unwrap_or(s.piece))
            .max()
            .unwrap_or(0);
        let body_start = (last_group_end + 1..pieces.len())
            .find(|&j| matches!(&pieces[j], Piece::Text(t) if is_body_separator(t)))
            .map(|j| j + 1)
            .unwrap_or(last_group_end + 1);
        BinderLayout {
            name_at,
            bracket_ends,
            body_start,
        }
    }

    /// Text piece `i` without the brackets that belong to binder groups:
    /// the opening bracket of a group that starts next, the closing one of
    /// a group that just ended.
    fn strip_brackets<'s>(&self, sites: &[BinderSite], i: usize, text: &'s str) -> &'s str {
        let mut s = text;
        if self
            .name_at
            .get(&(i + 1))
            .is_some_and(|&k| sites[k].bracketed)
        {
            let t = s.trim_end();
            if let Some(c) = t.chars().last().filter(|c| OPENERS.contains(c)) {
                s = &t[..t.len() - c.len_utf8()];
            }
        }
        if i > 0 && self.bracket_ends.contains(&(i - 1)) {
            let t = s.trim_start();
            if let Some(c) = t.chars().next().filter(|c| CLOSERS.contains(c)) {
                s = &t[c.len_utf8()..];
            }
        }
        s
    }
}

/// The sites of the group that starts at site `k`: `k` itself, the
/// following names that share its (printed) type, and, when it has none,
/// the following untyped sites separated by whitespace only.
fn group_at(pieces: &[Piece<'_>], sites: &[BinderSite], k: usize) -> Vec<usize> {
    let first = &sites[k];
    let shares_type = |s: &BinderSite| s.name.is_some() && s.ty == first.ty && s.ty.is_some();
    let untyped_next_to_previous = |g: usize| {
        sites[g].ty.is_none()
            && first.ty.is_none()
            && only_space_between(pieces, sites[g - 1].piece, sites[g].piece)
    };
    (k..sites.len())
        .take_while(|&g| g == k || shares_type(&sites[g]) || untyped_next_to_previous(g))
        .collect()
}

/// The pieces strictly between `a` and `b` are all whitespace text.
fn only_space_between(pieces: &[Piece<'_>], a: usize, b: usize) -> bool {
    (a + 1..b).all(|j| text_at(pieces, j).is_some_and(|t| t.trim().is_empty()))
}

fn text_at<'p>(pieces: &'p [Piece<'_>], i: usize) -> Option<&'p str> {
    match pieces.get(i) {
        Some(Piece::Text(t)) => Some(t.as_str()),
        _ => None,
    }
}

/// Joins binder runs separated by whitespace only (`∀ (a : A) {b : B}, p`)
/// into one run.
fn merge_binder_runs(parts: Vec<Part>) -> Vec<Part> {
    let mut merged: Vec<Part> = Vec::new();
    for p in parts {
        if let Part::Binders(nodes) = p {
            let n = merged.len();
            let ws_between = n >= 2
                && matches!(&merged[n - 1], Part::Text(t) if t.trim().is_empty())
                && matches!(&merged[n - 2], Part::Binders(_));
            if ws_between {
                merged.pop();
            }
            if let Some(Part::Binders(prev)) = merged.last_mut() {
                prev.extend(nodes);
            } else {
                merged.push(Part::Binders(nodes));
            }
        } else {
            merged.push(p);
        }
    }
    merged
}

/// One run of binders and one other child (the body): a chain of nodes
/// with the parts' label, one binder each, the last one over the body.
fn nest_binders(merged: Vec<Part>) -> Node {
    let mut label = String::new();
    let mut binders = Vec::new();
    let mut body = None;
    for p in merged {
        match p {
            Part::Text(t) => label.push_str(&t),
            Part::Binders(b) => {
                label.push('_');
                binders = b;
            }
            Part::Child(c) => {
                label.push('_');
                body = Some(c);
            }
        }
    }
    let label = normalize_label(&label);
    let mut node = body.expect("one child");
    while let Some(b) = binders.pop() {
        node = Node::op(label.clone(), vec![b, node]);
    }
    node
}

/// One node over all parts: a `_` per binder and per child.
fn flat_binder_node(merged: Vec<Part>) -> Node {
    let mut label = String::new();
    let mut kids = Vec::new();
    for p in merged {
        match p {
            Part::Text(t) => label.push_str(&t),
            Part::Binders(b) => {
                label.push_str(&vec!["_"; b.len()].join(" "));
                kids.extend(b);
            }
            Part::Child(c) => {
                label.push('_');
                kids.push(c);
            }
        }
    }
    Node::op(normalize_label(&label), kids)
}

/// A copy of `n` with bound-variable and hypothesis names blanked and
/// scope ids kept: two statements that differ only by bound names give
/// equal results.
pub fn erase_bound_names(n: &Node) -> Node {
    let mut m = n.clone();
    if matches!(m.kind, NodeKind::BoundVar | NodeKind::Hypothesis) {
        m.label = String::new();
    }
    m.children = n.children.iter().map(erase_bound_names).collect();
    m
}

#[cfg(test)]
mod tests;
