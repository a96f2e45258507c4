//! Where a goal's text has binders: the sites of named and anonymous
//! binders among the tagged pieces, and how they group into bracket
//! groups (moved out of `build.rs`).

use super::*;

/// Text that ends a binder list and starts the body: `∀ x, p`,
/// `fun x => t`, `fun x ↦ t`, `{x | p}`, `{x // p}`.
pub(super) fn is_body_separator(t: &str) -> bool {
    let t = t.trim_end();
    t.ends_with(',')
        || t.ends_with("=>")
        || t.ends_with('↦')
        || t.ends_with('|')
        || t.ends_with("//")
}

/// What may follow a binder name (after whitespace): its type, the body
/// separator, a binder predicate (`∀ x ∈ s`, `∃ n > 0`) or a closing bracket.
pub(super) fn may_follow_binder(t: &str) -> bool {
    let t = t.trim_start();
    t.starts_with([
        ':', ',', '|', '∈', '∉', '⊆', '⊂', '⊇', '⊃', '<', '≤', '>', '≥', '≠', '↦',
    ]) || t.starts_with("=>")
        || t.starts_with("in ")
        || t.starts_with("//")
        || t.starts_with(CLOSERS)
}

pub(super) fn is_identifier(s: &str) -> bool {
    let mut cs = s.chars();
    match cs.next() {
        Some(c) if c.is_alphabetic() || c == '_' || c == '«' => {}
        _ => return false,
    }
    !s.contains(char::is_whitespace) && !s.contains(['(', ')', ',', ':'])
}

/// Binding sites among a tag's children (see the module docs).
///
/// Lean annotates a binder name with an *extra* position from the
/// delaborator's hole iterator (`mkAnnotatedIdent`), and positions travel
/// as `"/1/0"` strings in which such extra positions read as short, often
/// meaningless paths. So names are found by shape: a text-only identifier
/// child after an opening bracket, after the construct's leading text
/// (`∀ `, `∃ `, `fun `, `∑ `, `{`) or after another name, followed by a
/// type (`:`), a separator, a binder predicate or a closing bracket, in a
/// construct that has a body separator (`,`, `=>`, `↦`, `|`). A candidate
/// whose position is a plausible subterm position of this tag (a strict
/// extension with coordinates 0/1, unrelated to its siblings' positions),
/// is an ordinary subterm instead: that is what tells `(x, y)` from
/// `∀ (x : α), p`.
pub(super) fn find_binders(pieces: &[Piece<'_>], own: Option<&SubexprPos>) -> Vec<BinderSite> {
    // The construct needs a body separator followed by a child.
    let has_separator = pieces.windows(2).any(
        |w| matches!((&w[0], &w[1]), (Piece::Text(t), Piece::Child(..)) if is_body_separator(t)),
    );
    if !has_separator {
        return vec![];
    }
    let kids: Vec<(usize, Option<&SubexprPos>)> = pieces
        .iter()
        .enumerate()
        .filter_map(|(i, p)| match p {
            Piece::Child(pos, _) => Some((i, pos.as_ref())),
            _ => None,
        })
        .collect();
    let mut sites = named_sites(pieces, own, &kids);
    add_anonymous_instances(pieces, &kids, &mut sites);
    group_sites(pieces, &mut sites);
    sites
}

/// The named binding sites: text-only identifier children placed as a
/// binder name is, and not at a plausible subterm position. Kind, type
/// and brackets are set later ([`group_sites`]).
pub(super) fn named_sites(
    pieces: &[Piece<'_>],
    own: Option<&SubexprPos>,
    kids: &[(usize, Option<&SubexprPos>)],
) -> Vec<BinderSite> {
    let mut sites: Vec<BinderSite> = Vec::new();
    for (n, &(i, q)) in kids.iter().enumerate() {
        let Piece::Child(_, body) = &pieces[i] else {
            unreachable!()
        };
        if !is_text_only(body) {
            continue;
        }
        let name = squash_ws(&body.strip_tags());
        if !is_identifier(&name) {
            continue;
        }
        let placed =
            preceded_like_a_binder(pieces, &sites, i, n == 0) && followed_like_a_binder(pieces, i);
        if !placed || plausible_subterm(own, kids, i, q) {
            continue;
        }
        sites.push(BinderSite {
            piece: i,
            name: Some(name),
            kind: BinderKind::Default,
            bracketed: false,
            ty: None,
        });
    }
    sites
}

/// Before a binder name: the previous name (directly or after
/// whitespace), an opening bracket, or, for the tag's first child, the
/// construct's leading text (`∀ `, `fun `).
pub(super) fn preceded_like_a_binder(
    pieces: &[Piece<'_>],
    sites: &[BinderSite],
    i: usize,
    first_child: bool,
) -> bool {
    let after_prev_name = sites.last().is_some_and(|s| {
        s.piece + 1 == i
            || (s.piece + 2 == i
                && text_at(pieces, s.piece + 1).is_some_and(|t| t.trim().is_empty()))
    });
    let before = if i == 0 { None } else { text_at(pieces, i - 1) };
    after_prev_name
        || before.is_some_and(|b| {
            let b = b.trim_end();
            b.ends_with(OPENERS) || (first_child && !b.is_empty())
        })
}

/// After a binder name: another name (directly or after whitespace), or
/// text that may follow a binder ([`may_follow_binder`]).
pub(super) fn followed_like_a_binder(pieces: &[Piece<'_>], i: usize) -> bool {
    let after = text_at(pieces, i + 1);
    let next_is_name = matches!(pieces.get(i + 1), Some(Piece::Child(..)))
        || (after.is_some_and(|t| t.trim().is_empty())
            && matches!(pieces.get(i + 2), Some(Piece::Child(_, b)) if is_text_only(b)));
    next_is_name || after.is_some_and(may_follow_binder)
}

/// Child `i` at `q` could be an ordinary subterm of the tag at `own`: a
/// strict extension with coordinates 0/1, unrelated to its siblings'
/// positions.
pub(super) fn plausible_subterm(
    own: Option<&SubexprPos>,
    kids: &[(usize, Option<&SubexprPos>)],
    i: usize,
    q: Option<&SubexprPos>,
) -> bool {
    let (Some(own), Some(q)) = (own, q) else {
        return false;
    };
    own.is_strict_prefix_of(q)
        && q.0[own.0.len()..].iter().all(|&c| c <= 1)
        && kids.iter().all(|&(j, p)| {
            j == i
                || p.is_none_or(|p| {
                    p != q && !p.is_strict_prefix_of(q) && !q.is_strict_prefix_of(p)
                })
        })
}

/// Anonymous instance binders: a child in `[`…`]` of the construct's own
/// text, before the body (`∀ {α : Type} [BEq α], p`), inserted in piece
/// order.
pub(super) fn add_anonymous_instances(
    pieces: &[Piece<'_>],
    kids: &[(usize, Option<&SubexprPos>)],
    sites: &mut Vec<BinderSite>,
) {
    let first_sep = (0..pieces.len())
        .find(|&j| matches!(&pieces[j], Piece::Text(t) if is_body_separator(t)))
        .unwrap_or(pieces.len());
    for &(i, _) in kids {
        if i > first_sep || sites.iter().any(|s| s.piece == i) {
            continue;
        }
        let before = i
            .checked_sub(1)
            .and_then(|j| text_at(pieces, j))
            .is_some_and(|t| t.trim_end().ends_with('['));
        let after = text_at(pieces, i + 1).is_some_and(|t| t.trim_start().starts_with(']'));
        if before && after {
            let at = sites.partition_point(|s| s.piece < i);
            sites.insert(
                at,
                BinderSite {
                    piece: i,
                    name: None,
                    kind: BinderKind::InstImplicit,
                    bracketed: true,
                    ty: Some(i),
                },
            );
        }
    }
}

/// Groups: names separated by whitespace only. Each group may have a type
/// (` : T`) and a bracket pair around it, which give every site of the
/// group its `ty`, `kind` and `bracketed`.
pub(super) fn group_sites(pieces: &[Piece<'_>], sites: &mut [BinderSite]) {
    let mut k = 0;
    while k < sites.len() {
        if sites[k].name.is_none() {
            k += 1;
            continue;
        }
        let mut end = k;
        while end + 1 < sites.len()
            && sites[end + 1].name.is_some()
            && only_space_between(pieces, sites[end].piece, sites[end + 1].piece)
        {
            end += 1;
        }
        let last = sites[end].piece;
        let ty = match (text_at(pieces, last + 1), pieces.get(last + 2)) {
            (Some(t), Some(Piece::Child(..))) if t.trim() == ":" => Some(last + 2),
            _ => None,
        };
        let kind = group_brackets(pieces, sites[k].piece, ty.unwrap_or(last) + 1);
        for s in &mut sites[k..=end] {
            s.kind = kind.unwrap_or(BinderKind::Default);
            s.bracketed = kind.is_some();
            s.ty = ty;
        }
        k = end + 1;
    }
}

/// The binder kind of the bracket pair around a group whose first name is
/// piece `first` and whose closing text is piece `close_at`; `None`
/// without a matching pair.
pub(super) fn group_brackets(
    pieces: &[Piece<'_>],
    first: usize,
    close_at: usize,
) -> Option<BinderKind> {
    let open = first
        .checked_sub(1)
        .and_then(|j| text_at(pieces, j))
        .and_then(|t| t.trim_end().chars().last());
    let close = text_at(pieces, close_at).and_then(|t| t.trim_start().chars().next());
    match (open, close) {
        (Some('('), Some(')')) => Some(BinderKind::Default),
        (Some('{'), Some('}')) => Some(BinderKind::Implicit),
        (Some('⦃'), Some('⦄')) => Some(BinderKind::StrictImplicit),
        (Some('['), Some(']')) => Some(BinderKind::InstImplicit),
        _ => None,
    }
}
