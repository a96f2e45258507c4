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
//! A binder's name is printed as an identifier tagged with the position of
//! the binding expression itself (`withBindingBodyUnusedName` annotates the
//! name at the current position before descending), so within one tag a
//! text-only child whose position equals the tag's own position, or is a
//! strict prefix of a sibling's position, is a *binding site*; ordinary
//! subterms of one node never have nested positions. Its domain (type),
//! when shown, is the child at `q/0`, and it scopes over the positions
//! under `q/1` (its body), which is how `∑ i ∈ s, f i` keeps `s` outside
//! the scope of `i`. This covers `∀`, `∃`, `fun`, set-builder and big
//! operators alike, Mathlib's included, without knowing any notation.
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

use crate::tagged::{SubexprPos, Tagged};
use leanpool_protocol::{BinderKind, Node, NodeKind};

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
    squash_ws(&s.replace(['(', ')'], " "))
        .replace("_ ,", "_,")
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

/// The binder kind an opening bracket stands for (`None`: not a bracket;
/// binders printed without one, as in `∃ x, p`, are explicit).
pub fn bracket_kind(c: char) -> Option<BinderKind> {
    match c {
        '(' => Some(BinderKind::Default),
        '{' => Some(BinderKind::Implicit),
        '⦃' => Some(BinderKind::StrictImplicit),
        '[' => Some(BinderKind::InstImplicit),
        _ => None,
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
    /// Piece index of the name.
    piece: usize,
    pos: SubexprPos,
    name: String,
    kind: BinderKind,
    /// Piece index of the type child, if printed.
    ty: Option<usize>,
}

impl TreeBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Allocates the next scope id and returns the leaf for the binding
    /// site; the name is *not* yet in scope (see [`Self::push_scope`]).
    pub fn fresh(&mut self, name: &str, kind: NodeKind) -> (Node, u32) {
        let id = self.next_id;
        self.next_id += 1;
        let leaf = Node { label: name.to_owned(), kind, scope: Some(id), binder: None, children: vec![] };
        (leaf, id)
    }

    pub fn push_scope(&mut self, name: &str, id: u32, kind: NodeKind) {
        self.stack.push(ScopeEntry { name: name.to_owned(), id, kind });
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
            return Node { label, kind: e.kind, scope: Some(e.id), binder: None, children: vec![] };
        }
        Node::atom(label)
    }

    fn tag(&mut self, pos: Option<SubexprPos>, body: &Tagged) -> Node {
        let mut pieces = Vec::new();
        flatten(body, &mut pieces);
        let children: Vec<usize> =
            (0..pieces.len()).filter(|&i| matches!(pieces[i], Piece::Child(..))).collect();
        if children.is_empty() {
            return self.leaf(&body.strip_tags());
        }
        if children.len() == 1 {
            let only_decoration = pieces.iter().all(|p| match p {
                Piece::Text(s) => s.chars().all(|c| c.is_whitespace() || c == '(' || c == ')'),
                Piece::Child(..) => true,
            });
            if only_decoration {
                let Piece::Child(p, b) = &pieces[children[0]] else { unreachable!() };
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

    fn binder_node(&mut self, pieces: &[Piece<'_>], sites: Vec<BinderSite>) -> Node {
        let name_at: std::collections::HashMap<usize, usize> =
            sites.iter().enumerate().map(|(k, s)| (s.piece, k)).collect();
        let type_pieces: std::collections::HashSet<usize> = sites.iter().filter_map(|s| s.ty).collect();
        // Binders of this node already built, with their positions.
        let mut local: Vec<(SubexprPos, ScopeEntry)> = Vec::new();
        let mut parts: Vec<Part> = Vec::new();
        let mut i = 0;
        while i < pieces.len() {
            match &pieces[i] {
                Piece::Text(s) => {
                    let mut s = s.as_str();
                    // Drop an opening bracket that starts the next binder group.
                    if name_at.contains_key(&(i + 1)) {
                        let t = s.trim_end();
                        if let Some(c) = t.chars().last().filter(|c| OPENERS.contains(c)) {
                            s = &t[..t.len() - c.len_utf8()];
                        }
                    }
                    // Drop the closing bracket of a group that just ended.
                    if i > 0 && (type_pieces.contains(&(i - 1)) || name_at.contains_key(&(i - 1))) {
                        let t = s.trim_start();
                        if let Some(c) = t.chars().next().filter(|c| CLOSERS.contains(c)) {
                            s = &t[c.len_utf8()..];
                        }
                    }
                    parts.push(Part::Text(s.to_owned()));
                    i += 1;
                }
                Piece::Child(cp, b) => {
                    let Some(&k) = name_at.get(&i) else {
                        let node = self.with_local(&local, cp.as_ref(), |me| me.tag(cp.clone(), b));
                        parts.push(Part::Child(node));
                        i += 1;
                        continue;
                    };
                    // A group: this name, following names, optional ` : type`.
                    let mut group = vec![k];
                    let mut j = i + 1;
                    loop {
                        match pieces.get(j) {
                            Some(Piece::Text(t))
                                if t.trim().is_empty() && name_at.contains_key(&(j + 1)) =>
                            {
                                group.push(name_at[&(j + 1)]);
                                j += 2;
                            }
                            Some(Piece::Child(..)) if name_at.contains_key(&j) => {
                                group.push(name_at[&j]);
                                j += 1;
                            }
                            _ => break,
                        }
                    }
                    let ty_piece = sites[k].ty.filter(|&tp| tp == j || tp == j + 1);
                    let ty_tree = ty_piece.map(|tp| {
                        let Piece::Child(tpos, tb) = &pieces[tp] else { unreachable!() };
                        self.with_local(&local, tpos.as_ref(), |me| me.tag(tpos.clone(), tb))
                    });
                    let mut nodes = Vec::new();
                    for &g in &group {
                        let site = &sites[g];
                        let (leaf, id) = self.fresh(&site.name, NodeKind::BoundVar);
                        let mut kids = vec![leaf];
                        kids.extend(ty_tree.clone());
                        nodes.push(Node {
                            label: binder_label(site.kind, ty_tree.is_some()),
                            kind: NodeKind::Op,
                            scope: None,
                            binder: Some(site.kind),
                            children: kids,
                        });
                        local.push((
                            site.pos.clone(),
                            ScopeEntry { name: site.name.clone(), id, kind: NodeKind::BoundVar },
                        ));
                    }
                    parts.push(Part::Binders(nodes));
                    i = match ty_piece {
                        Some(tp) => tp + 1,
                        None => j,
                    };
                }
            }
        }
        // Merge binder runs separated by whitespace only (`∀ (a : A) {b : B}, p`).
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
        let runs = merged.iter().filter(|p| matches!(p, Part::Binders(_))).count();
        let others = merged.iter().filter(|p| matches!(p, Part::Child(_))).count();
        let nb = sites.len();
        if runs == 1 && nb > 1 && others == 1 {
            // `Q a b, body` is `Q a, Q b, body`: nest, one binder per node.
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
            return node;
        }
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

    /// Builds with the node-local binders whose body contains `pos` in scope.
    fn with_local<T>(
        &mut self,
        local: &[(SubexprPos, ScopeEntry)],
        pos: Option<&SubexprPos>,
        f: impl FnOnce(&mut Self) -> T,
    ) -> T {
        let base = self.stack.len();
        if let Some(p) = pos {
            for (q, e) in local {
                let body = q.child(1);
                if body == *p || body.is_strict_prefix_of(p) {
                    self.stack.push(e.clone());
                }
            }
        }
        let r = f(self);
        self.stack.truncate(base);
        r
    }
}

fn find_binders(pieces: &[Piece<'_>], own: Option<&SubexprPos>) -> Vec<BinderSite> {
    let kids: Vec<(usize, &SubexprPos, &Tagged)> = pieces
        .iter()
        .enumerate()
        .filter_map(|(i, p)| match p {
            Piece::Child(Some(pos), b) => Some((i, pos, *b)),
            _ => None,
        })
        .collect();
    let mut sites = Vec::new();
    for &(i, q, b) in &kids {
        if !is_text_only(b) {
            continue;
        }
        let binds = own == Some(q) || kids.iter().any(|&(j, p, _)| j != i && q.is_strict_prefix_of(p));
        if !binds {
            continue;
        }
        let name = squash_ws(&b.strip_tags());
        if name.is_empty() || name.contains(' ') {
            continue;
        }
        sites.push(BinderSite { piece: i, pos: q.clone(), name, kind: BinderKind::Default, ty: None });
    }
    // Kind: bracket before the first name of a group (groups share it).
    let mut current = BinderKind::Default;
    for k in 0..sites.len() {
        let i = sites[k].piece;
        let prev_text = match i.checked_sub(1).map(|j| &pieces[j]) {
            Some(Piece::Text(s)) => Some(s.as_str()),
            _ => None,
        };
        let starts_group = match prev_text {
            Some(s) => !s.trim().is_empty(),
            None => k == 0 || sites[k - 1].piece + 1 != i,
        };
        if starts_group {
            current = prev_text
                .and_then(|s| s.trim_end().chars().last())
                .and_then(bracket_kind)
                .unwrap_or(BinderKind::Default);
        }
        sites[k].kind = current;
        // Type: the child at `q/0`, printed after the group.
        let dom = sites[k].pos.child(0);
        sites[k].ty = kids.iter().find(|&&(j, p, _)| j > i && *p == dom).map(|&(j, _, _)| j);
    }
    // A grouped binder's type is printed once, at the first name's domain;
    // later names of the same group share it.
    for k in 1..sites.len() {
        if sites[k].ty.is_none() {
            let same_group = {
                let (a, b) = (sites[k - 1].piece, sites[k].piece);
                (a + 1..b).all(|j| match &pieces[j] {
                    Piece::Text(s) => s.trim().is_empty(),
                    Piece::Child(..) => false,
                })
            };
            if same_group {
                sites[k].ty = sites[k - 1].ty;
            }
        }
    }
    sites
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
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn tag(pos: &str, body: Value) -> Value {
        json!({"tag": [{"subexprPos": pos, "info": {"p": "1"}}, body]})
    }
    fn text(s: &str) -> Value {
        json!({"text": s})
    }
    fn app(xs: Vec<Value>) -> Value {
        json!({"append": xs})
    }
    fn build(v: Value) -> Node {
        TreeBuilder::new().term(&Tagged::parse(&v).unwrap())
    }

    /// `∀ (c : Nat), a + c < b + c` shaped like Lean's goal output.
    fn forall_goal(var: &str) -> Value {
        let sum = |x: &str, p: &str| {
            tag(p, app(vec![tag(&format!("{p}/0/1"), text(x)), text(" + "), tag(&format!("{p}/1"), text(var))]))
        };
        tag("/", app(vec![
            text("∀ ("),
            tag("/", text(var)),
            text(" : "),
            tag("/0", text("Nat")),
            text("), "),
            tag("/1", app(vec![sum("a", "/1/0/1"), text(" < "), sum("b", "/1/1")])),
        ]))
    }

    #[test]
    fn forall_binder_and_operators() {
        let n = build(forall_goal("c"));
        assert_eq!(n.label, "∀ _, _");
        assert_eq!(n.children.len(), 2);
        let b = &n.children[0];
        assert_eq!(b.label, "(_ : _)");
        assert_eq!(b.binder, Some(BinderKind::Default));
        assert_eq!(b.children[0].kind, NodeKind::BoundVar);
        assert_eq!(b.children[0].scope, Some(0));
        assert_eq!(b.children[1], Node::atom("Nat"));
        let body = &n.children[1];
        assert_eq!(body.label, "_ < _");
        assert_eq!(body.children[0].label, "_ + _");
        // `c` in the body refers to the binder; `a` is free here.
        assert_eq!(body.children[0].children[1].scope, Some(0));
        assert_eq!(body.children[0].children[0], Node::atom("a"));
    }

    #[test]
    fn renaming_gives_equal_trees_up_to_names() {
        let a = build(forall_goal("c"));
        let b = build(forall_goal("d"));
        assert_ne!(a, b);
        assert_eq!(erase_bound_names(&a), erase_bound_names(&b));
    }

    #[test]
    fn parentheses_do_not_matter() {
        // `x * (y + z)`: the parenthesizer's parens sit in the parent's text.
        let v = tag("/", app(vec![
            tag("/0/1", text("x")),
            text(" * ("),
            tag("/1", app(vec![tag("/1/0/1", text("y")), text(" + "), tag("/1/1", text("z"))])),
            text(")"),
        ]));
        let n = build(v);
        assert_eq!(n.label, "_ * _");
        assert_eq!(n.children[1].label, "_ + _");
        // A wrapper holding one parenthesized child is transparent.
        let w = tag("/", app(vec![text("("), tag("/1", text("q")), text(")")]));
        assert_eq!(build(w), Node::atom("q"));
    }

    #[test]
    fn grouped_binders_split_and_kinds() {
        // `∀ {α : Type} (a b : α), a = b` (positions as the delaborator gives).
        let v = tag("/", app(vec![
            text("∀ {"),
            tag("/", text("α")),
            text(" : "),
            tag("/0", text("Type")),
            text("} ("),
            tag("/1", text("a")),
            text(" "),
            tag("/1/1", text("b")),
            text(" : "),
            tag("/1/0", text("α")),
            text("), "),
            tag("/1/1/1", app(vec![tag("/1/1/1/0/1", text("a")), text(" = "), tag("/1/1/1/1", text("b"))])),
        ]));
        let n = build(v);
        // Nested: ∀ {α}, ∀ (a), ∀ (b), a = b
        assert_eq!(n.label, "∀ _, _");
        assert_eq!(n.children[0].binder, Some(BinderKind::Implicit));
        assert_eq!(n.children[0].label, "{_ : _}");
        let n2 = &n.children[1];
        assert_eq!(n2.children[0].binder, Some(BinderKind::Default));
        // `a`'s type `α` refers to the first binder.
        assert_eq!(n2.children[0].children[1].scope, Some(0));
        let n3 = &n2.children[1];
        assert_eq!(n3.children[0].children[0].label, "b");
        assert_eq!(n3.children[0].children[1].scope, Some(0));
        let eq = &n3.children[1];
        assert_eq!(eq.label, "_ = _");
        assert_eq!(eq.children[0].scope, Some(1));
        assert_eq!(eq.children[1].scope, Some(2));
    }

    #[test]
    fn big_operator_scope_excludes_the_range() {
        // `∑ i ∈ s, f i` = Finset.sum s (fun i => f i): `i` at /1, s at /0/1,
        // body at /1/1. A free `i` in `s` must not bind to the sum's `i`.
        let v = tag("/", app(vec![
            text("∑ "),
            tag("/1", text("i")),
            text(" ∈ "),
            tag("/0/1", app(vec![text("Finset.range "), tag("/0/1/1", text("i"))])),
            text(", "),
            tag("/1/1", app(vec![text("f "), tag("/1/1/1", text("i"))])),
        ]));
        let mut b = TreeBuilder::new();
        let (_, outer) = b.fresh("i", NodeKind::BoundVar);
        b.push_scope("i", outer, NodeKind::BoundVar);
        let n = b.term(&Tagged::parse(&v).unwrap());
        assert_eq!(n.label, "∑ _ ∈ _, _");
        assert_eq!(n.children[0].label, "(_)");
        let inner = n.children[0].children[0].scope.unwrap();
        assert_ne!(inner, outer);
        assert_eq!(n.children[1].label, "Finset.range _");
        assert_eq!(n.children[1].children[0].scope, Some(outer));
        assert_eq!(n.children[2].children[0].scope, Some(inner));
    }

    #[test]
    fn whitespace_and_line_breaks_in_labels() {
        let v = tag("/", app(vec![text("Nat.gcd\n    "), tag("/0/1", text("a")), text("  "), tag("/1", text("b"))]));
        assert_eq!(build(v).label, "Nat.gcd _ _");
    }
}
