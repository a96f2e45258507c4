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

use leanpool_protocol::Position;
use leanpool_screen::lex::{self, Kind, Token};
use leanpool_screen::vocab::DECLARATION_MODIFIERS;
use leanpool_screen::{Document, DocumentError, LeanText, LineIndex, Piece, Screened};

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

/// Where the statement sits in a text (byte offsets into it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatementSpan {
    /// Start of the statement's command: its doc comment, attributes and
    /// modifiers (`private`, `noncomputable`, …), else the keyword.
    pub command: usize,
    /// Start of `theorem`/`lemma`/`example`.
    pub keyword: usize,
    /// End of the keyword and name (start of the signature).
    pub sig_start: usize,
    /// End of the signature's last token (comments after it excluded).
    pub sig_end: usize,
    /// The declaration's own name, if it has one.
    pub name: Option<String>,
}

/// Why a statement text could not be turned into a document.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SourceError {
    #[error("no `theorem`, `lemma` or `example` found in the text")]
    /// The text has no declaration to analyse.
    NoDeclaration,
    /// The text cannot be read exactly as Lean would, or the statement
    /// document would not read like it (see `leanpool_lean::assemble`).
    #[error("{0}")]
    Refused(String),
}

impl From<DocumentError> for SourceError {
    fn from(e: DocumentError) -> Self {
        SourceError::Refused(e.0)
    }
}

impl From<lex::LexError> for SourceError {
    fn from(e: lex::LexError) -> Self {
        SourceError::Refused(format!("rejected `{}`: {}", e.construct, e.reason))
    }
}

/// Finds the statement among `toks` (the guard's token stream of `text`),
/// looking only at tokens starting at or after `from`.
pub fn find_statement_in(
    text: &str,
    toks: &[Token],
    from: usize,
) -> Result<StatementSpan, SourceError> {
    // Tokens read inside string literals are not the text's own tokens.
    let toks: Vec<&Token> = toks
        .iter()
        .filter(|t| !t.nested && t.start >= from)
        .collect();
    let src = |t: &Token| &text[t.start..t.end];
    // 1. The keyword (as written: `«theorem»` is a name, not the keyword).
    let k = toks
        .iter()
        .position(|t| {
            ["theorem", "lemma", "example"]
                .iter()
                .any(|w| is_word(text, t, w))
        })
        .ok_or(SourceError::NoDeclaration)?;
    let kw = toks[k];
    // 2. The command's start: doc comment, attributes, modifiers.
    let c = command_start(text, &toks, k);
    // 3. The name (not for `example`): one identifier token.
    let mut n = k + 1;
    let mut name = None;
    if src(kw) != "example" {
        if let Some(t) = toks.get(n).filter(|t| t.kind == Kind::Ident) {
            name = Some(src(t).to_owned());
            n += 1;
        }
    }
    let sig_start = toks[n - 1].end;
    // 4. The signature: up to the first `:=` at bracket depth 0.
    let sig_end = signature_end(&toks[n..], sig_start);
    Ok(StatementSpan {
        command: toks[c].start,
        keyword: kw.start,
        sig_start,
        sig_end,
        name,
    })
}

/// Whether `t` is the identifier `w` as written in `text`.
fn is_word(text: &str, t: &Token, w: &str) -> bool {
    t.kind == Kind::Ident && &text[t.start..t.end] == w
}

/// Whether `t` is the symbol `w`.
fn is_sym(t: &Token, w: &str) -> bool {
    t.kind == Kind::Symbol && t.text == w
}

/// The index of the first token of the command whose keyword is at `k`:
/// back over its doc comment, `@[…]` attributes and modifiers.
fn command_start(text: &str, toks: &[&Token], k: usize) -> usize {
    let mut c = k;
    while let Some(j) = c.checked_sub(1) {
        let t = toks[j];
        if (t.kind == Kind::DocComment && t.text == "/--")
            || DECLARATION_MODIFIERS.iter().any(|w| is_word(text, t, w))
        {
            c = j;
        } else if is_sym(t, "]") {
            // `@[…]`: back to the matching `[`, which must follow `@`.
            match matching_open(toks, j) {
                Some(o) if o > 0 && is_sym(toks[o - 1], "@") => c = o - 1,
                _ => break,
            }
        } else {
            break;
        }
    }
    c
}

/// The index of the `[` matching the `]` at `close`, if there is one.
fn matching_open(toks: &[&Token], close: usize) -> Option<usize> {
    let mut depth = 0i32;
    let mut m = close;
    loop {
        let u = toks[m];
        if is_sym(u, "]") {
            depth += 1;
        } else if is_sym(u, "[") {
            depth -= 1;
            if depth == 0 {
                return Some(m);
            }
        }
        m = m.checked_sub(1)?;
    }
}

/// The end of a signature whose tokens start `toks` (from `sig_start`):
/// the end of its last token before the first `:=` at bracket depth 0.
fn signature_end(toks: &[&Token], sig_start: usize) -> usize {
    let mut depth = 0i32;
    let mut sig_end = sig_start;
    for t in toks {
        if t.kind == Kind::Symbol {
            match t.text.as_str() {
                ":=" if depth == 0 => break,
                "(" | "[" | "{" | "⦃" | "⟨" | "⟦" => depth += 1,
                ")" | "]" | "}" | "⦄" | "⟩" | "⟧" => depth -= 1,
                _ => {}
            }
        }
        sig_end = t.end;
    }
    sig_end
}

/// [`find_statement_in`] for a text of its own.
pub fn find_statement(body: &str) -> Result<StatementSpan, SourceError> {
    let toks = lex::tokenize(body)?;
    find_statement_in(body, &toks, 0)
}

/// A verbatim piece of the sent text: `len` bytes at `sent` came from
/// `Document::text` at `doc`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Segment {
    sent: usize,
    doc: usize,
    len: usize,
}

/// The full document text for one statement, with positions of interest.
#[derive(Debug, Clone)]
pub struct StatementDoc {
    /// Header + built body: what `Worker::elaborate` gets.
    sent: LeanText,
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
    /// Offset in `document.text` of the keyword: where diagnostics on
    /// text leanpool wrote are reported.
    anchor: usize,
    document: Document,
}

fn options_prefix(extra: &[(&str, &str)]) -> String {
    PP_OPTIONS
        .iter()
        .chain(extra)
        .map(|(k, v)| format!("set_option {k} {v} in\n"))
        .collect()
}

impl StatementDoc {
    /// Builds the statement document from the caller's text. The text
    /// sent is assembled from copied ranges of the caller's document and
    /// leanpool's own text, and must tokenize exactly like those pieces
    /// (`leanpool_lean::assemble`), else the text is refused.
    pub fn new(screened: &Screened) -> Result<StatementDoc, SourceError> {
        let document = screened.document().clone();
        let base = document.text.as_str();
        let toks = screened.document_tokens();
        let hdr = document.header.len();
        let span = find_statement_in(base, toks, hdr)?;
        let newline_before = if span.command > 0 && !base[..span.command].ends_with('\n') {
            "\n"
        } else {
            ""
        };
        let prefix = format!("{newline_before}{}", options_prefix(&[]));
        let tail_options = options_prefix(&[("pp.piBinderNames", "true")]);
        let name = format!("theorem {CANONICAL_NAME}");
        let proof = " := by\n  sorry\n";
        let check = format!("#check @{CANONICAL_NAME}\n");
        let pieces = [
            Piece::Copied(0..span.command),
            Piece::Written(&prefix),
            Piece::Copied(span.command..span.keyword),
            Piece::Written(&name),
            Piece::Copied(span.sig_start..span.sig_end),
            Piece::Written(proof),
            Piece::Written(&tail_options),
            Piece::Written(&check),
        ];
        let sent = screened.assemble(&pieces)?;
        let (text, at) = (sent.as_str(), sent.offsets());
        let segments = pieces
            .iter()
            .zip(at)
            .filter_map(|(p, &sent)| match p {
                Piece::Copied(r) => Some(Segment {
                    sent,
                    doc: r.start,
                    len: r.len(),
                }),
                Piece::Written(_) => None,
            })
            .collect();
        let idx = LineIndex::new(text);
        let sorry = idx.position(at[5] + proof.find("sorry").expect("sorry is in the proof"));
        let check_line = idx.position(at[7]).line;
        Ok(StatementDoc {
            header: document.header.clone(),
            sorry,
            check_line,
            signature: base[span.sig_start..span.sig_end].trim().to_owned(),
            decl: at[3]..at[5],
            segments,
            anchor: span.keyword,
            document,
            sent,
        })
    }

    /// Header + built body, as sent to Lean.
    pub fn text(&self) -> &str {
        self.sent.as_str()
    }

    /// The text to hand to `Worker::elaborate`.
    pub fn lean_text(&self) -> &LeanText {
        &self.sent
    }

    /// Maps a position in `text` to the caller's text.
    pub fn to_caller(&self, pos: Position) -> Position {
        let off = LineIndex::new(self.text()).offset(pos);
        let doc_off = self
            .segments
            .iter()
            .find(|s| off >= s.sent && off <= s.sent + s.len && s.len > 0)
            .map(|s| s.doc + (off - s.sent))
            .unwrap_or(self.anchor);
        self.document
            .to_caller(LineIndex::new(&self.document.text).position(doc_off))
    }

    /// A document range in the caller's coordinates.
    pub fn range_to_caller(&self, r: leanpool_protocol::Range) -> leanpool_protocol::Range {
        leanpool_protocol::Range {
            start: self.to_caller(r.start),
            end: self.to_caller(r.end),
        }
    }

    /// `true` if a position of `text` lies in text copied from the caller
    /// (as opposed to text leanpool wrote: the name, `sorry`, options).
    pub fn is_verbatim(&self, pos: Position) -> bool {
        let off = LineIndex::new(self.text()).offset(pos);
        self.segments
            .iter()
            .any(|s| s.len > 0 && off >= s.sent && off < s.sent + s.len)
    }

    /// `true` if a line of `text` belongs to the `#check` leanpool added.
    pub fn is_check_line(&self, line: u32) -> bool {
        line >= self.check_line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stmt_doc(text: &str) -> StatementDoc {
        let policy = leanpool_screen::GuardPolicy::default();
        StatementDoc::new(&leanpool_screen::screen(text, &policy).unwrap()).unwrap()
    }

    #[test]
    fn finds_keyword_name_and_proof() {
        let b = "/-- doc with theorem inside -/\n@[simp] theorem foo.bar (a : Nat) (h : a = (1 : Nat)) : a + 0 = 1 := by simp [h]\n";
        let s = find_statement(b).unwrap();
        assert_eq!(&b[s.keyword..s.keyword + 7], "theorem");
        assert_eq!(s.name.as_deref(), Some("foo.bar"));
        assert_eq!(
            &b[s.sig_start..s.sig_end],
            " (a : Nat) (h : a = (1 : Nat)) : a + 0 = 1"
        );
    }

    #[test]
    fn default_values_strings_and_examples() {
        let b = "example (x : Nat := 3) (s : String := \":=\") : x = x := rfl";
        let s = find_statement(b).unwrap();
        assert_eq!(s.name, None);
        assert_eq!(
            &b[s.sig_start..s.sig_end],
            " (x : Nat := 3) (s : String := \":=\") : x = x"
        );
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
        let d = stmt_doc(caller);
        assert!(d.text().starts_with("import Init\n"));
        assert!(d.text().contains(
            "theorem stmt (a b : Nat) (h : a < b) : ∀ c, a + c < b + c := by\n  sorry\n"
        ));
        assert!(d.text().ends_with("#check @stmt\n"));
        assert_eq!(d.signature, "(a b : Nat) (h : a < b) : ∀ c, a + c < b + c");
        assert_eq!(
            &d.text()[d.decl.clone()],
            "theorem stmt (a b : Nat) (h : a < b) : ∀ c, a + c < b + c"
        );
        let idx = LineIndex::new(d.text());
        assert_eq!(
            &d.text()[idx.offset(d.sorry)..idx.offset(d.sorry) + 5],
            "sorry"
        );
        // `h` in the sent text maps to `h` in the caller's text (the
        // caller's line has an astral character before it).
        let sent_h = d.text().find("(h :").unwrap() + 1;
        let p = d.to_caller(idx.position(sent_h));
        let cidx = LineIndex::new(caller);
        assert_eq!(&caller[cidx.offset(p)..cidx.offset(p) + 1], "h");
        assert_eq!(p.line, 2);
        // Text leanpool wrote maps to the keyword.
        let p = d.to_caller(d.sorry);
        assert_eq!(
            p,
            Position {
                line: 2,
                character: 0
            }
        );
    }

    /// Issue 10: the old statement finder did not know raw strings, so it
    /// took the `:=` inside one for the proof and cut the string open:
    /// the payload ran through `normalize` and `opt`. The finder now reads
    /// the guard's tokens, and the sent text is checked to read like them.
    #[test]
    fn attack_raw_string_hides_the_proof_separator() {
        let t = "theorem t : r#\"x\" #eval (424301 : Nat) := 1\"# = \"\" := sorry";
        let d = stmt_doc(t);
        assert_eq!(d.signature, ": r#\"x\" #eval (424301 : Nat) := 1\"# = \"\"");
        assert!(
            d.text().contains(
                "theorem stmt : r#\"x\" #eval (424301 : Nat) := 1\"# = \"\" := by\n  sorry\n"
            ),
            "{}",
            d.text()
        );
        for hashes in ["#", "##", "###"] {
            let t = format!("theorem t : r{hashes}\"\" := \"{hashes} = \"\" := sorry");
            let s = find_statement(&t).unwrap();
            assert_eq!(
                &t[s.sig_start..s.sig_end],
                format!(" : r{hashes}\"\" := \"{hashes} = \"\"")
            );
        }
    }

    #[test]
    fn options_go_before_the_statement_command_after_header_commands() {
        let t = "import Init\nopen Nat\nset_option maxHeartbeats 0\n/-- doc -/\n@[simp] private theorem t (n : Nat) : n = n := rfl";
        let d = stmt_doc(t);
        assert_eq!(d.header, "import Init\n");
        let body = &d.text()[d.header.len()..];
        assert!(
            body.starts_with(
                "           \nopen Nat\nset_option maxHeartbeats 0\nset_option pp.all false in\n"
            ),
            "{body}"
        );
        assert!(body.contains("set_option pp.inaccessibleNames true in\n/-- doc -/\n@[simp] private theorem stmt (n : Nat) : n = n := by\n  sorry\n"), "{body}");
        // `open` maps back to the caller's `open`.
        let idx = LineIndex::new(d.text());
        let p = d.to_caller(idx.position(d.text().find("open").unwrap()));
        assert_eq!(
            p,
            Position {
                line: 1,
                character: 0
            }
        );
    }

    #[test]
    fn a_comment_after_the_signature_is_not_copied() {
        let d = stmt_doc("theorem t : True -- why\n  := trivial");
        assert!(
            d.text().contains("theorem stmt : True := by\n"),
            "{}",
            d.text()
        );
    }
}
