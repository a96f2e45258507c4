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
//! - the token after `;` inside a block, after `<;>`, `<|>`, `·`, or after
//!   a combinator that takes a tactic (`try`, `repeat`, `all_goals`,
//!   `any_goals`, `focus`, `first |`, `iterate n`, `with_reducible`,
//!   `fail_if_success`, `classical`, `solve |`, `case … =>`, `next … =>`,
//!   `on_goal … =>`, `conv … =>`);
//! - the token after a `(` or `{` that is itself a tactic head (`(tac)`,
//!   `{ tac }`), after the `[` of `<;> [t₁, t₂]` and each of its commas;
//! - the token after each `|` of a `first`/`solve` head (`first | a | b`),
//!   after the `=>` of an alternative (`| pat => tac` of `match`,
//!   `induction … with`, `cases … with`; not a `fun … =>`), after the
//!   `then`/`else` of an `if` head, after the `in` of a `set_option … in`
//!   / `open … in` head.
//!
//! Terms in the same places (`f (x := 1)` after `exact`, in a `fun … =>`
//! body, on a continuation line indented deeper than its block) are not
//! heads, so their named arguments stay arguments. (Issue 20, seventh
//! session: `(t …)`, `{t …}`, `<;> [t …]`, `iterate n t …`,
//! `first | a | t …`, `| _ => t …`, `if … then t …`, `with_reducible t …`,
//! `classical t …`, `set_option … in t …`, `t₁ <|> t …` were not heads,
//! so an unlisted tactic's configuration passed there.)

use crate::lex::{Kind, Token};

/// Combinators after which a tactic starts, wherever they stand.
const ALWAYS_TAKE_TACTIC: &[&str] = &[
    "try",
    "repeat",
    "repeat'",
    "all_goals",
    "any_goals",
    "focus",
    "first",
];

/// Combinators after which a tactic starts when they stand at a tactic
/// head themselves.
const HEAD_TAKES_TACTIC: &[&str] = &[
    "iterate",
    "with_reducible",
    "with_reducible_and_instances",
    "with_unfolding_all",
    "fail_if_success",
    "classical",
    "solve",
];

/// Words whose `… =>` is followed by a tactic on the same line.
const ARROW_HEADS: &[&str] = &["case", "case'", "next", "on_goal", "pick_goal", "conv"];

/// What a tactic head opened that makes later tokens heads, with the
/// bracket depth it applies at.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Opened {
    /// `first`/`solve`: each `|`.
    Alternatives,
    /// `if`: `then` and `else`.
    If,
    /// `set_option … in` / `open … in`: the `in`.
    In,
    /// `<;> [`: each `,`.
    List,
}

/// The scan's state over one text.
struct Scan<'a> {
    src: &'a str,
    toks: &'a [Token],
    out: Vec<bool>,
    blocks: Vec<usize>,
    /// The first word of the current line (for `case … =>`).
    line_word: Option<&'a str>,
    depth: usize,
    opened: Vec<(usize, Opened)>,
    /// The depth of the last `|` in a tactic block, and whether a `fun`
    /// came after it (then its `=>` is a term's).
    bar: Option<(usize, bool)>,
}

/// For each token, whether it starts a tactic step.
pub(crate) fn heads(src: &str, toks: &[Token]) -> Vec<bool> {
    let mut s = Scan {
        src,
        toks,
        out: vec![false; toks.len()],
        blocks: Vec::new(),
        line_word: None,
        depth: 0,
        opened: Vec::new(),
        bar: None,
    };
    for (i, t) in toks.iter().enumerate() {
        if !t.nested {
            s.step(i);
        }
    }
    s.out
}

impl<'a> Scan<'a> {
    fn column(&self, t: &Token) -> usize {
        let line_start = self.src[..t.start].rfind('\n').map_or(0, |p| p + 1);
        self.src[line_start..t.start].chars().count()
    }

    fn starts_line(&self, t: &Token) -> bool {
        let before = &self.src[..t.start];
        before.rfind('\n').map_or(before.trim().is_empty(), |p| {
            before[p + 1..].trim().is_empty()
        })
    }

    fn sym(&self, i: usize, s: &str) -> bool {
        self.toks
            .get(i)
            .is_some_and(|t| t.kind == Kind::Symbol && t.text == s)
    }

    fn step(&mut self, i: usize) {
        let t = &self.toks[i];
        if self.starts_line(t) {
            let c = self.column(t);
            while self.blocks.last().is_some_and(|&b| b > c) {
                self.blocks.pop();
            }
            self.line_word = (t.kind == Kind::Ident).then_some(t.text.as_str());
            if self.blocks.last() == Some(&c) {
                self.out[i] = true;
            }
        }
        if i > 0 && self.after(i) {
            self.out[i] = true;
        }
        self.track(i);
    }

    /// Whether token `i` starts a tactic because of what precedes it.
    fn after(&mut self, i: usize) -> bool {
        let p = &self.toks[i - 1];
        let prev_head = self.out[i - 1];
        let after = |s: &str| p.kind == Kind::Symbol && p.text == s;
        let word = |w: &[&str]| p.kind == Kind::Ident && w.contains(&p.text.as_str());
        let tactic_block = !self.blocks.is_empty();
        let arrow = after(">") && i >= 2 && self.sym(i - 2, "=");
        let at = |o: Opened| self.opened.contains(&(self.depth, o));
        if p.kind == Kind::Ident && p.text == "by" {
            self.blocks.push(self.column(&self.toks[i]));
            return true;
        }
        (after(";") && tactic_block)
            || after("·")
            || (after(">") && i >= 3 && self.sym(i - 2, ";") && self.sym(i - 3, "<"))
            || (after(">")
                && i >= 3
                && self.sym(i - 2, "|")
                && self.sym(i - 3, "<")
                && tactic_block)
            || (word(HEAD_TAKES_TACTIC) && prev_head)
            || word(ALWAYS_TAKE_TACTIC)
            || (p.kind == Kind::Num && i >= 2 && self.toks[i - 2].text == "iterate")
            || (after("|") && at(Opened::Alternatives))
            || (after("|") && i >= 2 && self.toks[i - 2].text == "first")
            || (arrow && self.line_word.is_some_and(|w| ARROW_HEADS.contains(&w)))
            || (arrow && self.bar.is_some_and(|(d, fun)| d == self.depth && !fun))
            || ((after("(") || after("{")) && prev_head)
            || (after("[") && i >= 4 && self.sym(i - 2, ">") && self.sym(i - 3, ";"))
            || (after(",") && at(Opened::List))
            || (word(&["then", "else"]) && at(Opened::If))
            || (word(&["in"]) && at(Opened::In))
    }

    /// Brackets, and what a head opens.
    fn track(&mut self, i: usize) {
        let t = &self.toks[i];
        let head = self.out[i];
        // The token after an alternative's `=>` has been judged.
        if i >= 2 && self.sym(i - 1, ">") && self.sym(i - 2, "=") {
            self.bar = None;
        }
        // … and the token after an `in` or `else` that closed its head.
        match i
            .checked_sub(1)
            .map(|p| (self.toks[p].kind, self.toks[p].text.as_str()))
        {
            Some((Kind::Ident, "in")) => self.close(Opened::In),
            Some((Kind::Ident, "else")) => self.close(Opened::If),
            _ => {}
        }
        match (t.kind, t.text.as_str()) {
            (Kind::Symbol, "(" | "[" | "{" | "⟨") => {
                self.depth += 1;
                if t.text == "[" && i >= 3 && self.sym(i - 1, ">") && self.sym(i - 2, ";") {
                    self.opened.push((self.depth, Opened::List));
                }
            }
            (Kind::Symbol, ")" | "]" | "}" | "⟩") => {
                self.opened.retain(|&(d, _)| d < self.depth);
                self.depth = self.depth.saturating_sub(1);
            }
            (Kind::Symbol, "|") if !self.blocks.is_empty() => self.bar = Some((self.depth, false)),
            (Kind::Ident, "fun" | "λ") => {
                if let Some((_, fun)) = &mut self.bar {
                    *fun = true;
                }
            }
            (Kind::Ident, "first" | "solve") if head => {
                self.opened.push((self.depth, Opened::Alternatives))
            }
            (Kind::Ident, "if") if head => self.opened.push((self.depth, Opened::If)),
            (Kind::Ident, "set_option" | "open") if head => {
                self.opened.push((self.depth, Opened::In))
            }
            _ => {}
        }
    }

    /// Forgets the innermost `o` opened at the current depth.
    fn close(&mut self, o: Opened) {
        if let Some(k) = self.opened.iter().rposition(|&x| x == (self.depth, o)) {
            self.opened.remove(k);
        }
    }
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
            // Issue 20, seventh session: heads that were missed.
            ("example : True := by\n  (my_tac (x := 2))", "my_tac (x := …)"),
            ("example : True := by\n  {my_tac +x}", "my_tac +x"),
            ("example : True := by\n  skip <;> [my_tac +x]", "my_tac +x"),
            ("example : True := by\n  skip <;> [skip, my_tac +x]", "my_tac +x"),
            ("example : True := by\n  iterate 3 my_tac +x", "my_tac +x"),
            ("example : True := by\n  first | skip | my_tac +x", "my_tac +x"),
            ("example : True := by\n  solve | my_tac +x", "my_tac +x"),
            ("example : True := by\n  match 1 with\n  | _ => my_tac +x", "my_tac +x"),
            ("example : True := by\n  match 1 with | _ => my_tac +x", "my_tac +x"),
            (
                "example : True := by\n  induction 1 with\n  | zero => my_tac +x\n  | succ => trivial",
                "my_tac +x",
            ),
            ("example : True := by\n  if h : True then my_tac +x else skip", "my_tac +x"),
            ("example : True := by\n  if h : True then skip else my_tac +x", "my_tac +x"),
            ("example : True := by\n  conv => my_tac +x", "my_tac +x"),
            ("example : True := by\n  with_reducible my_tac +x", "my_tac +x"),
            ("example : True := by\n  fail_if_success my_tac +x", "my_tac +x"),
            ("example : True := by\n  classical my_tac +x", "my_tac +x"),
            ("example : True := by\n  set_option maxRecDepth 100 in my_tac +x", "my_tac +x"),
            ("example : True := by\n  open Nat in my_tac +x", "my_tac +x"),
            ("example : True := by\n  skip <|> my_tac +x", "my_tac +x"),
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
            "theorem t : True := by\n  exact (fun (f : (x : Nat) → Nat) => trivial) (fun x => x)",
            "theorem t (f : (x : Nat) → Nat) : True := by\n  cases h : f (x := 1) with\n  | zero => exact (fun _ => trivial) (f (x := 2))\n  | succ n => trivial",
            "theorem t (f : (x : Nat) → Nat) : True := by\n  exact (match 1 with | _ => fun _ => trivial) (f (x := 1))",
            "theorem t (f : (x : Nat) → Nat) : True := by\n  (have := f (x := 1); trivial)",
            "theorem t (f : (x : Nat) → Nat) (h : f 1 = 1) : True := by\n  rw [show f (x := 1) = 1 from h] at *\n  trivial",
        ] {
            assert_eq!(construct(text), None, "{text}");
        }
    }
}
