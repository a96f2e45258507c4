//! The document leanpool elaborates for one statement, built from the
//! caller's *source* text (never from Lean's output), and the way back.
//!
//! The caller's body holds one `theorem`/`lemma`/`example`. A small lexer
//! (comments, string and char literals, bracket depth) finds the keyword,
//! the declaration name and the first `:=` at bracket depth 0 (the proof).
//! The body leanpool sends is
//!
//! ```text
//! set_option pp.… in …                      -- PP_OPTIONS, fixed
//! <caller text before the keyword>theorem stmt<signature, verbatim> := by
//!   sorry
//! set_option pp.… in set_option pp.piBinderNames true in
//! #check @stmt
//! ```
//!
//! so the goal at `sorry` is the statement with its binders introduced,
//! and the `#check` message is its type as one `∀` telescope (binder
//! kinds). The proof is never elaborated: `normalize`/`opt` are about the
//! statement. Verbatim segments keep a map to the caller's offsets so
//! Lean's diagnostics land on the caller's text; a diagnostic on text
//! leanpool wrote (the name, the `sorry`, the `#check`) lands on the
//! declaration keyword.

use leanpool_lean::{Document, LineIndex};
use leanpool_protocol::Position;

/// Canonical declaration name (the statement's own name is dropped).
pub const CANONICAL_NAME: &str = "stmt";

/// Pretty-printer options, fixed so output is deterministic and does not
/// depend on options in the caller's header. Why each:
/// - `pp.fieldNotation false`: `Nat.gcd a b`, not `a.gcd b` (whose head
///   would depend on the first argument's type namespace);
/// - `pp.proofs true`, `pp.deepTerms true`, `pp.maxSteps`: never elide
///   subterms as `⋯`;
/// - `pp.funBinderTypes true`: `fun (x : ℕ) => …` / `∃ (x : ℕ), …`, so every
///   binder shows its type, as statement binders do;
/// - `pp.inaccessibleNames true`: the goal lists every hypothesis (else
///   Lean hides unused inaccessible ones, e.g. anonymous instances);
/// - `pp.tagAppFns false`: function heads stay operator text (`Nat.gcd _ _`),
///   not tagged atoms;
/// - the rest pin Lean's defaults (notation, unicode, coercions shown as
///   `↑`, no universes / full names / numeric types / explicit args) against
///   a header that changes them.
pub const PP_OPTIONS: &[(&str, &str)] = &[
    ("pp.all", "false"),
    ("pp.notation", "true"),
    ("pp.parens", "false"),
    ("pp.unicode", "true"),
    ("pp.unicode.fun", "false"),
    ("pp.coercions", "true"),
    ("pp.explicit", "false"),
    ("pp.universes", "false"),
    ("pp.fullNames", "false"),
    ("pp.numericTypes", "false"),
    ("pp.natLit", "false"),
    ("pp.fieldNotation", "false"),
    ("pp.proofs", "true"),
    ("pp.deepTerms", "true"),
    ("pp.maxSteps", "100000000"),
    ("pp.funBinderTypes", "true"),
    ("pp.piBinderTypes", "true"),
    ("pp.piBinderNames", "false"),
    ("pp.foralls", "true"),
    ("pp.beta", "false"),
    ("pp.safeShadowing", "true"),
    ("pp.tagAppFns", "false"),
    ("pp.structureInstances", "true"),
    ("pp.match", "true"),
    ("pp.instances", "true"),
    ("pp.letVarTypes", "false"),
    ("pp.mvars", "true"),
    ("pp.inaccessibleNames", "true"),
];

/// Where the statement sits in the caller's body (byte offsets into it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatementSpan {
    /// Start of `theorem`/`lemma`/`example`.
    pub keyword: usize,
    /// End of the keyword and name (start of the signature).
    pub sig_start: usize,
    /// End of the signature: the `:=` of the proof, or the end of the body.
    pub sig_end: usize,
    /// The declaration's own name, if it has one.
    pub name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SourceError {
    #[error("no `theorem`, `lemma` or `example` found in the text")]
    NoDeclaration,
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '\'' | '!' | '?' | '.') || ('₀'..='₉').contains(&c) || ('ₐ'..='ₜ').contains(&c)
}

/// Tokens the scanner cares about, with byte offsets.
struct Scanner<'a> {
    s: &'a str,
    i: usize,
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<char> {
        self.s[self.i..].chars().next()
    }
    fn rest(&self) -> &'a str {
        &self.s[self.i..]
    }
    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.i += c.len_utf8();
        Some(c)
    }
    /// Skips one comment, string or char literal at the cursor, if any.
    fn skip_trivia(&mut self, prev: Option<char>) -> bool {
        let r = self.rest();
        if r.starts_with("--") {
            self.i += r.find('\n').unwrap_or(r.len());
            true
        } else if r.starts_with("/-") {
            let mut depth = 0;
            while self.i < self.s.len() {
                let r = self.rest();
                if r.starts_with("/-") {
                    depth += 1;
                    self.i += 2;
                } else if r.starts_with("-/") {
                    depth -= 1;
                    self.i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    self.bump();
                }
            }
            true
        } else if r.starts_with('"') {
            self.bump();
            while let Some(c) = self.bump() {
                match c {
                    '\\' => {
                        self.bump();
                    }
                    '"' => break,
                    _ => {}
                }
            }
            true
        } else if r.starts_with('\'') && !prev.is_some_and(is_ident_char) {
            // A char literal `'a'` / `'\n'`; a `'` after an identifier
            // character is part of that identifier (`h'`).
            let save = self.i;
            self.bump();
            if self.peek() == Some('\\') {
                self.bump();
            }
            self.bump();
            if self.peek() == Some('\'') {
                self.bump();
            } else {
                self.i = save + 1;
            }
            true
        } else if r.starts_with('«') {
            self.i += r.find('»').map(|j| j + '»'.len_utf8()).unwrap_or(r.len());
            true
        } else {
            false
        }
    }
}

/// Finds the statement in a body (see the module docs).
pub fn find_statement(body: &str) -> Result<StatementSpan, SourceError> {
    let mut sc = Scanner { s: body, i: 0 };
    let mut prev: Option<char> = None;
    // 1. The keyword, at a word boundary, outside comments and strings.
    let (keyword, kw) = loop {
        if sc.i >= body.len() {
            return Err(SourceError::NoDeclaration);
        }
        if sc.skip_trivia(prev) {
            prev = Some(' ');
            continue;
        }
        if !prev.is_some_and(is_ident_char) {
            let r = sc.rest();
            let hit = ["theorem", "lemma", "example"].into_iter().find(|k| {
                r.starts_with(k) && !r[k.len()..].chars().next().is_some_and(is_ident_char)
            });
            if let Some(k) = hit {
                break (sc.i, k);
            }
        }
        prev = sc.bump();
    };
    sc.i = keyword + kw.len();
    // 2. The name (not for `example`).
    let mut name = None;
    if kw != "example" {
        loop {
            while sc.peek().is_some_and(char::is_whitespace) {
                sc.bump();
            }
            if !sc.skip_trivia(Some(' ')) {
                break;
            }
        }
        let start = sc.i;
        if sc.rest().starts_with('«') {
            sc.skip_trivia(Some(' '));
        }
        while sc.peek().is_some_and(|c| is_ident_char(c) || c == '«') {
            if sc.peek() == Some('«') {
                sc.skip_trivia(Some(' '));
            } else {
                sc.bump();
            }
        }
        // `foo.{u}`: the universe list stays in the signature.
        if sc.s[start..sc.i].ends_with('.') && sc.peek() == Some('{') {
            sc.i -= 1;
        }
        if sc.i > start {
            name = Some(body[start..sc.i].to_owned());
        }
    }
    let sig_start = sc.i;
    // 3. The first `:=` at bracket depth 0.
    let mut depth = 0i32;
    prev = None;
    let sig_end = loop {
        if sc.i >= body.len() {
            break body.len();
        }
        if sc.skip_trivia(prev) {
            prev = Some(' ');
            continue;
        }
        let r = sc.rest();
        if depth == 0 && r.starts_with(":=") {
            break sc.i;
        }
        let c = sc.bump().expect("not at end");
        match c {
            '(' | '[' | '{' | '⦃' | '⟨' | '⟦' => depth += 1,
            ')' | ']' | '}' | '⦄' | '⟩' | '⟧' => depth -= 1,
            _ => {}
        }
        prev = Some(c);
    };
    Ok(StatementSpan { keyword, sig_start, sig_end, name })
}

/// A verbatim piece of the sent body: `len` bytes at `sent` came from the
/// caller's body at `caller`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Segment {
    sent: usize,
    caller: usize,
    len: usize,
}

/// The full document text for one statement, with positions of interest.
#[derive(Debug, Clone)]
pub struct StatementDoc {
    /// Header + built body: what `Worker::elaborate` gets.
    pub text: String,
    /// The header part (the worker's key).
    pub header: String,
    /// Position of `sorry` in `text` (for `getInteractiveGoals`).
    pub sorry: Position,
    /// Line of `#check` in `text`.
    pub check_line: u32,
    /// Signature text as the caller wrote it (binders and type).
    pub signature: String,
    /// Byte range in `text` of `theorem stmt <signature>` (what the
    /// hover-per-character baseline hovers).
    pub decl: std::ops::Range<usize>,
    segments: Vec<Segment>,
    /// Caller-body offset of the keyword: where diagnostics on text
    /// leanpool wrote are reported.
    anchor: usize,
    document: Document,
    caller_text: String,
}

fn options_prefix(extra: &[(&str, &str)]) -> String {
    PP_OPTIONS
        .iter()
        .chain(extra)
        .map(|(k, v)| format!("set_option {k} {v} in\n"))
        .collect()
}

impl StatementDoc {
    pub fn new(caller_text: &str) -> Result<StatementDoc, SourceError> {
        let document = Document::new(caller_text);
        let body = &document.text[document.header.len()..];
        let span = find_statement(body)?;
        let mut out = options_prefix(&[]);
        let mut segments = Vec::new();
        let mut copy = |out: &mut String, from: usize, to: usize| {
            segments.push(Segment { sent: out.len(), caller: from, len: to - from });
            out.push_str(&body[from..to]);
        };
        copy(&mut out, 0, span.keyword);
        let decl_start = out.len();
        out.push_str("theorem ");
        out.push_str(CANONICAL_NAME);
        let sig = body[span.sig_start..span.sig_end].trim_end();
        copy(&mut out, span.sig_start, span.sig_start + sig.len());
        let decl_end = out.len();
        out.push_str(" := by\n  ");
        let sorry_off = out.len();
        out.push_str("sorry\n");
        out.push_str(&options_prefix(&[("pp.piBinderNames", "true")]));
        let check_off = out.len();
        out.push_str("#check @");
        out.push_str(CANONICAL_NAME);
        out.push('\n');
        let text = format!("{}{}", document.header, out);
        let idx = LineIndex::new(&text);
        let sorry = idx.position(document.header.len() + sorry_off);
        let check_line = idx.position(document.header.len() + check_off).line;
        Ok(StatementDoc {
            text,
            header: document.header.clone(),
            sorry,
            check_line,
            signature: sig.trim().to_owned(),
            decl: document.header.len() + decl_start..document.header.len() + decl_end,
            segments,
            anchor: span.keyword,
            document,
            caller_text: caller_text.to_owned(),
        })
    }

    /// Maps a position in `text` to the caller's text.
    pub fn to_caller(&self, pos: Position) -> Position {
        let idx = LineIndex::new(&self.text);
        let off = idx.offset(pos);
        let hdr = self.header.len();
        if off < hdr {
            return self.document.to_caller(pos);
        }
        let sent = off - hdr;
        let caller_body_off = self
            .segments
            .iter()
            .find(|s| sent >= s.sent && sent <= s.sent + s.len && s.len > 0)
            .map(|s| s.caller + (sent - s.sent))
            .unwrap_or(self.anchor);
        // The caller's body starts at the same byte in `document.text`
        // after the canonical header; in the caller's own text it starts
        // at `caller_text.len() - body.len()`.
        let body_len = self.document.text.len() - hdr;
        let caller_off = self.caller_text.len() - body_len + caller_body_off;
        LineIndex::new(&self.caller_text).position(caller_off)
    }

    pub fn range_to_caller(&self, r: leanpool_protocol::Range) -> leanpool_protocol::Range {
        leanpool_protocol::Range { start: self.to_caller(r.start), end: self.to_caller(r.end) }
    }

    /// `true` if a position of `text` lies in text copied from the caller
    /// (as opposed to text leanpool wrote: the name, `sorry`, options).
    pub fn is_verbatim(&self, pos: Position) -> bool {
        let off = LineIndex::new(&self.text).offset(pos);
        let hdr = self.header.len();
        off < hdr || {
            let sent = off - hdr;
            self.segments.iter().any(|s| s.len > 0 && sent >= s.sent && sent < s.sent + s.len)
        }
    }

    /// `true` if a line of `text` belongs to the `#check` leanpool added.
    pub fn is_check_line(&self, line: u32) -> bool {
        line >= self.check_line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_keyword_name_and_proof() {
        let b = "/-- doc with theorem inside -/\n@[simp] theorem foo.bar (a : Nat) (h : a = (1 : Nat)) : a + 0 = 1 := by simp [h]\n";
        let s = find_statement(b).unwrap();
        assert_eq!(&b[s.keyword..s.keyword + 7], "theorem");
        assert_eq!(s.name.as_deref(), Some("foo.bar"));
        assert_eq!(&b[s.sig_start..s.sig_end], " (a : Nat) (h : a = (1 : Nat)) : a + 0 = 1 ");
    }

    #[test]
    fn default_values_strings_and_examples() {
        let b = "example (x : Nat := 3) (s : String := \":=\") : x = x := rfl";
        let s = find_statement(b).unwrap();
        assert_eq!(s.name, None);
        assert_eq!(&b[s.sig_start..s.sig_end], " (x : Nat := 3) (s : String := \":=\") : x = x ");
        let b = "lemma h' : True";
        let s = find_statement(b).unwrap();
        assert_eq!(s.name.as_deref(), Some("h'"));
        assert_eq!(s.sig_end, b.len());
        assert!(find_statement("-- theorem in a comment\ndef x := 1").is_err());
        let b = "theorem t.{u} (α : Sort u) : True := trivial";
        let s = find_statement(b).unwrap();
        assert_eq!(s.name.as_deref(), Some("t"));
        assert!(b[s.sig_start..].starts_with(".{u}"));
    }

    #[test]
    fn document_and_position_map() {
        let caller = "import Init\n\ntheorem 𝓝foo (a b : Nat) (h : a < b) : ∀ c, a + c < b + c := by\n  omega\n";
        let d = StatementDoc::new(caller).unwrap();
        assert!(d.text.starts_with("import Init\n"));
        assert!(d.text.contains("theorem stmt (a b : Nat) (h : a < b) : ∀ c, a + c < b + c := by\n  sorry\n"));
        assert!(d.text.ends_with("#check @stmt\n"));
        assert_eq!(d.signature, "(a b : Nat) (h : a < b) : ∀ c, a + c < b + c");
        assert_eq!(&d.text[d.decl.clone()], "theorem stmt (a b : Nat) (h : a < b) : ∀ c, a + c < b + c");
        let idx = LineIndex::new(&d.text);
        assert_eq!(&d.text[idx.offset(d.sorry)..idx.offset(d.sorry) + 5], "sorry");
        // `h` in the sent text maps to `h` in the caller's text (the
        // caller's line has an astral character before it).
        let sent_h = d.text.find("(h :").unwrap() + 1;
        let p = d.to_caller(idx.position(sent_h));
        let cidx = LineIndex::new(caller);
        assert_eq!(&caller[cidx.offset(p)..cidx.offset(p) + 1], "h");
        assert_eq!(p.line, 2);
        // Text leanpool wrote maps to the keyword.
        let p = d.to_caller(d.sorry);
        assert_eq!(p, Position { line: 2, character: 0 });
    }
}
