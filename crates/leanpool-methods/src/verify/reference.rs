//! `verify`'s comparison of the theorem's elaborated type with the
//! statement's: the trailer lines after the verdict's, and how Lean's
//! answer to them is read.
//!
//! The reference is a `theorem` leanpool declares from the caller's
//! statement alone (its binders and type, as written), elaborated the way
//! the caller's theorem is (same kind, same scope: universe parameters in
//! the same order, a `let` stored as `have` on both sides), proved by an
//! axiom of leanpool's that proves anything (it is never used by anything
//! else). Then one `example` compares the two types *syntactically*
//! (`guard_expr … =ₛ …`, Lean's built-in tactic, no user code) with both
//! constants at the *same explicit universe parameters*
//! (`@t.{leanpool_u1, …}` and `@ref.{leanpool_u1, …}`): `@c` alone gives
//! each constant fresh universe metavariables, never syntactically equal,
//! so a universe-polymorphic theorem could never match. The number of
//! universe parameters is not known before Lean elaborates, so the
//! comparison is tried with 0, 1, …, [`MAX_UNIVERSES`] of them under
//! `first`; a count that is not the constants' fails (too many levels is
//! an error; too few leaves fresh metavariables, never syntactically
//! equal), and the successful alternative, only it, prints a fixed line
//! naming its count ([`marker`]). That line, at that alternative's own
//! line, is the positive evidence the judge requires; anything else there
//! (no marker, another message) means the types differ.
//!
//! Why this is sound: both constants are instantiated at the same rigid
//! parameters, so a syntactic match means the theorem proves the
//! statement at every universe. A theorem proved only at a specialised
//! universe (`Type` for `Type u`), with its parameters permuted or
//! collapsed (`max u v`, one for two), has a type that differs at those
//! parameters, and no alternative matches.

/// The reserved name of the reference theorem.
pub const REFERENCE: &str = "«leanpool_verify_reference»";

/// The reserved name of the axiom that proves the reference (it proves
/// anything; nothing but the reference uses it). Written plainly: it
/// follows the caller's statement on its line, and a `«` there would be
/// read differently after a Mathlib token such as `''` that the lexer
/// leaves open (the trailer's pieces must tokenize as themselves).
pub const ANY: &str = "leanpool_verify_any";

/// The most universe parameters a `verify` statement may have: a theorem
/// with more is answered `error` (the comparison is not tried for it).
pub const MAX_UNIVERSES: usize = 8;

/// The universe names of the comparison (declared in the trailer; a
/// caller's header or body declaring one makes the answer `error`).
fn universe(i: usize) -> String {
    format!("leanpool_u{i}")
}

/// The line the comparison with `n` universe parameters prints when the
/// types are the same.
pub fn marker(n: usize) -> String {
    format!("leanpool: same statement at {n} universe parameters")
}

/// The comparison's trailer lines for the theorem `name` (as written) and
/// the statement's `binders_and_type` (after its name), and the index
/// among them of the line of the alternative with 0 universe parameters
/// (alternative `n` is on the `n`-th line after it).
pub fn lines(name: &str, binders_and_type: &str) -> (Vec<String>, usize) {
    let mut lines = vec![
        format!("axiom {ANY} {{α : Sort _}} : α"),
        // Unused binders of the reference are the statement's, not news.
        "set_option linter.unusedVariables false in".to_string(),
    ];
    let reference = format!("theorem {REFERENCE}{binders_and_type} := {ANY}");
    lines.extend(reference.split('\n').map(str::to_string));
    let names: Vec<String> = (1..=MAX_UNIVERSES).map(universe).collect();
    lines.push(format!("universe {}", names.join(" ")));
    lines.push("example : True := by".to_string());
    lines.push("  first".to_string());
    let first = lines.len();
    for n in 0..=MAX_UNIVERSES {
        let levels = if n == 0 {
            String::new()
        } else {
            format!(".{{{}}}", names[..n].join(", "))
        };
        lines.push(format!(
            "  | guard_expr type_of% @{name}{levels} =ₛ type_of% @{REFERENCE}{levels}; trace \"{}\"; exact trivial",
            marker(n)
        ));
    }
    (lines, first)
}

/// Whether Lean's answer to the comparison lines is exactly the positive
/// evidence: one information message, at the line of the alternative `n`
/// (`first_line + n`, lines counted in the same text as the messages'),
/// reading [`marker`]`(n)`, and no other message.
pub fn matched(messages: &[(u32, leanpool_protocol::Severity, &str)], first_line: u32) -> bool {
    match messages {
        [(line, severity, text)] => {
            let Some(n) = line.checked_sub(first_line).map(|n| n as usize) else {
                return false;
            };
            n <= MAX_UNIVERSES
                && *severity == leanpool_protocol::Severity::Information
                && *text == marker(n)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use leanpool_protocol::Severity;

    #[test]
    fn one_alternative_per_universe_count() {
        let (l, first) = lines("t", " {α : Type u} (l : List α) : l ++ [] = l");
        assert_eq!(l.len(), first + MAX_UNIVERSES + 1);
        assert_eq!(
            l[2],
            format!("theorem {REFERENCE} {{α : Type u}} (l : List α) : l ++ [] = l := {ANY}")
        );
        assert!(l[first].contains("@t =ₛ type_of% @«leanpool_verify_reference»;"));
        assert!(l[first + 2].contains(
            "@t.{leanpool_u1, leanpool_u2} =ₛ type_of% @«leanpool_verify_reference».{leanpool_u1, leanpool_u2};"
        ));
        assert!(l[first + 2].contains(&marker(2)));
    }

    #[test]
    fn only_the_marker_at_its_own_line_is_evidence() {
        let info = Severity::Information;
        let m1 = marker(1);
        assert!(matched(&[(11, info, &m1)], 10));
        // Nothing, the marker at another alternative's line, another
        // severity, another message beside it: not evidence.
        assert!(!matched(&[], 10));
        assert!(!matched(&[(12, info, &m1)], 10));
        assert!(!matched(&[(9, info, &m1)], 10));
        assert!(!matched(&[(11, Severity::Warning, &m1)], 10));
        assert!(!matched(&[(11, info, &m1), (11, info, "x")], 10));
        let far = marker(MAX_UNIVERSES + 1);
        assert!(!matched(&[(10 + MAX_UNIVERSES as u32 + 1, info, &far)], 10));
    }
}
