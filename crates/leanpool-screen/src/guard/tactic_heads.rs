//! Where a tactic starts: the tokens that are the first word of a tactic
//! step, so that a configuration written after any tactic, listed or not,
//! is recognised as one (default-deny, `super::config`).
//!
//! Lean's tactic blocks (`by` and the tactic sequences nested in it) are
//! `sepByIndent tactic "; "`: the steps of one block are separated by `;`
//! or start on a new line *at the block's column* (`checkColEq`); the
//! block's column is the column of its first tactic, the token after
//! `by`. A token is a tactic head here when it is:
//!
//! - the token after `by`;
//! - the first token of its line at the column of an open block (blocks
//!   whose column is to the right of a line's first token are closed);
//! - the token after `;` inside a block, after `<;>`, after `·`, or after
//!   a combinator that takes a tactic (`try`, `repeat`, `all_goals`,
//!   `any_goals`, `focus`, `first |`, `iterate n`, `case … =>`,
//!   `next … =>`, `on_goal … =>`).
//!
//! Terms in the same places (`f (x := 1)` after `exact`, in a `fun … =>`
//! body, on a continuation line indented deeper than its block) are not
//! heads, so their named arguments stay arguments.

use crate::lex::{Kind, Token};

/// Combinators after which a tactic starts.
const TAKES_TACTIC: &[&str] = &[
    "try",
    "repeat",
    "repeat'",
    "all_goals",
    "any_goals",
    "focus",
    "iterate",
    "first",
];

/// Words whose `… =>` is followed by a tactic on the same line.
const ARROW_HEADS: &[&str] = &["case", "case'", "next", "on_goal", "pick_goal"];

/// For each token, whether it starts a tactic step.
pub(crate) fn heads(src: &str, toks: &[Token]) -> Vec<bool> {
    let column = |t: &Token| {
        let line_start = src[..t.start].rfind('\n').map_or(0, |p| p + 1);
        src[line_start..t.start].chars().count()
    };
    let starts_line = |i: usize| {
        let t = &toks[i];
        src[..t.start]
            .rfind('\n')
            .map_or(src[..t.start].trim().is_empty(), |p| {
                src[p + 1..t.start].trim().is_empty()
            })
    };
    let mut out = vec![false; toks.len()];
    let mut blocks: Vec<usize> = Vec::new();
    // The first word of the current line (for `case … =>`).
    let mut line_word: Option<&str> = None;
    for i in 0..toks.len() {
        let t = &toks[i];
        if t.nested {
            continue;
        }
        let prev = i.checked_sub(1).map(|p| &toks[p]);
        if starts_line(i) {
            let c = column(t);
            while blocks.last().is_some_and(|&b| b > c) {
                blocks.pop();
            }
            line_word = (t.kind == Kind::Ident).then_some(t.text.as_str());
            if blocks.last() == Some(&c) {
                out[i] = true;
            }
        }
        let Some(p) = prev else { continue };
        let after = |s: &str| p.kind == Kind::Symbol && p.text == s;
        let after_word = |w: &[&str]| p.kind == Kind::Ident && w.contains(&p.text.as_str());
        if p.kind == Kind::Ident && p.text == "by" {
            out[i] = true;
            blocks.push(column(t));
        } else if (after(";") && !blocks.is_empty())
            || after("·")
            || (after(">") && i >= 3 && toks[i - 2].text == ";" && toks[i - 3].text == "<")
            || after_word(TAKES_TACTIC)
            || (after("|") && i >= 2 && toks[i - 2].text == "first")
            || (after(">")
                && i >= 2
                && toks[i - 2].text == "="
                && line_word.is_some_and(|w| ARROW_HEADS.contains(&w)))
        {
            out[i] = true;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::guard::{screen, GuardPolicy};

    fn construct(text: &str) -> Option<String> {
        screen(text, &GuardPolicy::default())
            .err()
            .map(|r| r.construct)
    }

    #[test]
    fn unlisted_tactics_cannot_be_configured_anywhere_a_tactic_starts() {
        for (text, c) in [
            ("example : True := by my_tac (x := 1)", "my_tac (x := …)"),
            (
                "example : True := by\n  skip\n  my_tac +flag",
                "my_tac +flag",
            ),
            ("example : True := by\n  skip; my_tac -flag", "my_tac -flag"),
            (
                "example : True := by\n  all_goals my_tac (x := true)",
                "my_tac (x := …)",
            ),
            (
                "example : True := by\n  constructor <;> my_tac (x := 2)",
                "my_tac (x := …)",
            ),
            (
                "example : True ∧ True := by\n  constructor\n  · my_tac (x := 2)",
                "my_tac (x := …)",
            ),
            (
                "example : True := by\n  first | my_tac (x := 2) | trivial",
                "my_tac (x := …)",
            ),
            (
                "example : True := by\n  case h => my_tac (x := 2)",
                "my_tac (x := …)",
            ),
            (
                "example : True := by\n  have : True := by\n    my_tac +x\n  trivial",
                "my_tac +x",
            ),
        ] {
            assert_eq!(construct(text).as_deref(), Some(c), "{text}");
        }
    }

    #[test]
    fn terms_keep_their_named_arguments() {
        for text in [
            "theorem t (f : (x : Nat) → Nat) : True := by\n  exact (fun _ => trivial) (f (x := 1))",
            "theorem t : True := by\n  have h := Nat.lt_irrefl (n := 1)\n  trivial",
            "theorem t : True :=\n  let f := fun x : Nat => Nat.succ_le_of_lt (n := x)\n  trivial",
            "theorem t : True := by\n  refine\n    id (a := True) ?_\n  trivial",
            "theorem t : 1 = 1 := by\n  rw [Nat.add_comm (n := 1)]",
            "theorem t (a b : Nat) : a - b = a - b := by\n  simp +arith",
        ] {
            assert_eq!(construct(text), None, "{text}");
        }
    }
}
