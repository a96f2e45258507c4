//! Lean's lexical rules: the one token stream the guard screens and the
//! documents sent to Lean are built from.
//!
//! A tokenizer that follows Lean 4's own token functions
//! (`Lean.Parser.Basic`: `whitespace`, `finishCommentBlock`, `tokenFnAux`,
//! `strLitFnAux`, `charLitFnAux`, `rawStrLitFnAux`, `identFnAux`,
//! `interpolatedStrFn`), so that the guard sees the same code / non-code
//! split as Lean does.
//!
//! The one thing that matters for safety is *hiding*: comments, string,
//! character and raw-string literals and `«…»` identifiers are regions
//! whose contents the guard does not inspect as code. If the guard ever
//! hid text that Lean reads as code, a command could slip through. So:
//!
//! * hiding regions are recognised exactly where Lean recognises them (at
//!   token starts, with Lean's precedence: `--` / `/-` before tokens, then
//!   `"`, `'` (unless followed by `'`), digits, name literals, raw strings,
//!   then identifiers and symbols);
//! * any *lexical error* inside a hiding region is a rejection, because
//!   Lean's error recovery (`parseCommand` → `consumeInput`) restarts
//!   tokenizing just after the error, i.e. *inside* the region — an
//!   unterminated string or an invalid escape would otherwise let Lean
//!   read the string's contents as commands;
//! * where Lean's reading depends on its token table (which the guard does
//!   not have: Mathlib tokens such as `∑'`, `⁻¹'`, `''`), the guard takes
//!   the reading that hides *less*, and rejects when the readings differ in
//!   what they hide;
//! * identifier characters are the *narrowest* set any Lean 4 release used
//!   (without the Latin-1 letters newer releases accept), so a keyword is
//!   never swallowed into a longer identifier by the guard when Lean would
//!   split it; the cost is only that `unsafeé` is rejected like `unsafe`.
//!
//! Interpolated strings (`s!"…{e}…"`, `m!`, `throwError "…"`) contain code
//! between braces. Whether a string is interpolated depends on the parser
//! that reads it, so for every string whose text contains `{` the guard
//! also reads it as interpolated, requires both readings to end at the same
//! place, and inspects the string's whole content as code (a term that does
//! not end exactly at its `}` makes Lean's error recovery read the rest of
//! the string as code).

mod chars;
mod literals;

pub use chars::{is_id_first, is_id_rest};
use chars::{is_invisible, CORE_UNICODE_TOKENS};

/// What a token is, as far as the guard's rules care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Identifier or keyword; `text` is the name with `«»` escapes removed.
    Ident,
    /// `` `name `` literal; `text` is the name.
    NameLit,
    /// `#` directly followed by identifier characters, e.g. `#eval`.
    HashCmd,
    /// A string literal (plain, raw or interpolated); `text` is the raw source.
    Str,
    /// A character literal (`'a'`, `'\n'`); `text` is the raw source.
    Char,
    /// A numeric literal; `text` is the raw source.
    Num,
    /// `/-- … -/` or `/-! … -/`: a token for Lean, but its text is prose.
    DocComment,
    /// Punctuation: one character, or one of `:=`, `''`.
    Symbol,
}

#[derive(Debug, Clone, PartialEq, Eq)]
/// One token of the screened text, as Lean's tokenizer would read it.
pub struct Token {
    /// What the token is.
    pub kind: Kind,
    /// Its text (see [`Kind`] for what each kind keeps).
    pub text: String,
    /// Byte offsets into the screened text.
    pub start: usize,
    /// Byte offset just past the token's last byte.
    pub end: usize,
    /// Whether whitespace or a comment separates this token from the previous one.
    pub space_before: bool,
    /// A token read from the text *inside* a string literal (the guard
    /// inspects an interpolated string's content as code); it follows the
    /// string's own `Str` token and lies within its range.
    pub nested: bool,
}

/// A lexical problem that makes the code / non-code split ambiguous.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LexError {
    /// Byte offset where the problem is.
    pub offset: usize,
    /// The construct being read (`string literal`, `comment`, ...).
    pub construct: String,
    /// What is wrong with it, for the caller.
    pub reason: String,
}

/// How deep string interpolations may nest (`s!"{s!"{…}"}"`). Bounded so
/// adversarial input cannot exhaust the stack.
const MAX_INTERP_DEPTH: u32 = 4;

/// Reads `src` the way Lean's tokenizer would (comments and whitespace
/// dropped, literals whole). Text whose reading would be ambiguous
/// (unterminated or badly escaped literals, too deep interpolation) is
/// an `Err`: the guard refuses it rather than guess.
pub fn tokenize(src: &str) -> Result<Vec<Token>, LexError> {
    let mut lx = Lexer::new(src);
    // A byte-order mark at the very start is an encoding artefact, not code.
    let start = if src.starts_with('\u{feff}') { 3 } else { 0 };
    lx.code(start, false, 0)?;
    lx.verify_resumes()?;
    Ok(lx.out)
}

struct Lexer<'a> {
    src: &'a str,
    out: Vec<Token>,
    /// Comment spans (block and line), in order.
    comments: Vec<(usize, usize)>,
    /// Where Lean resumes reading if a `'` the guard read as (part of) a
    /// symbol is a failed character literal for Lean: `charLitFnAux`
    /// consumes the `'` and two more characters before it reports the
    /// missing `'`, and the command loop goes on right there. With the
    /// offset of the `'` and what to call it.
    resumes: Vec<(usize, usize, &'static str)>,
}

fn err(offset: usize, construct: &str, reason: &str) -> LexError {
    LexError {
        offset,
        construct: construct.to_string(),
        reason: reason.to_string(),
    }
}

impl<'a> Lexer<'a> {
    fn new(src: &'a str) -> Self {
        Lexer {
            src,
            out: Vec::new(),
            comments: Vec::new(),
            resumes: Vec::new(),
        }
    }

    /// Lean resuming after a failed character literal must land where the
    /// guard's reading is between tokens (a token's start, or whitespace
    /// outside comments): then both readings go on alike, Lean having read
    /// less. Inside a token or a comment it would read differently (a
    /// keyword at the end of a name, `xyrun_cmd`; a comment's text).
    fn verify_resumes(&self) -> Result<(), LexError> {
        let spans: Vec<(usize, usize)> = self
            .out
            .iter()
            .filter(|t| !t.nested)
            .map(|t| (t.start, t.end))
            .collect();
        let inside = |v: &[(usize, usize)], r: usize| {
            let k = v.partition_point(|&(s, _)| s < r);
            k > 0 && v[k - 1].1 > r
        };
        for &(r, at, what) in &self.resumes {
            if r < self.src.len() && (inside(&spans, r) || inside(&self.comments, r)) {
                return Err(err(
                    at,
                    what,
                    "a `'` that is not a character literal: if it is not part of a token in scope, \
                     Lean reads it as a failed character literal and resumes two characters later, \
                     inside what the guard reads as one token or comment; separate it from a following name by two spaces",
                ));
            }
        }
        Ok(())
    }

    /// Records where Lean resumes after a failed character literal whose
    /// first character is at `c1`.
    fn note_resume(&mut self, c1: usize, at: usize, what: &'static str) {
        let mut r = c1;
        for _ in 0..2 {
            if let Some(c) = self.ch(r) {
                r += c.len_utf8();
            }
        }
        self.resumes.push((r, at, what));
    }

    fn ch(&self, i: usize) -> Option<char> {
        self.src.get(i..).and_then(|s| s.chars().next())
    }

    fn at(&self, i: usize, c: char) -> bool {
        self.ch(i) == Some(c)
    }

    fn push(&mut self, kind: Kind, text: String, start: usize, end: usize, space_before: bool) {
        self.out.push(Token {
            kind,
            text,
            start,
            end,
            space_before,
            nested: false,
        });
    }

    /// Lex code from `i`. With `in_braces` this is the inside of an
    /// interpolation `{…}`: it stops at the `}` closing it and returns its
    /// offset; otherwise it runs to the end and returns the length.
    /// `depth` counts enclosing string literals (bounds recursion).
    fn code(&mut self, mut i: usize, in_braces: bool, depth: u32) -> Result<usize, LexError> {
        let mut braces = 0u32;
        let mut space = true;
        loop {
            let Some(c) = self.ch(i) else {
                if in_braces {
                    return Err(err(
                        i,
                        "string interpolation",
                        "unterminated `{` in a string literal",
                    ));
                }
                return Ok(i);
            };
            let n = i + c.len_utf8();
            let glued = !space
                && self.out.last().is_some_and(|t| {
                    t.end == i && matches!(t.kind, Kind::Symbol | Kind::Ident | Kind::HashCmd)
                });
            self.check_glued(i, n, c, glued)?;
            if let Some(next) = self.whitespace(i, n, c, &mut space) {
                i = next;
                continue;
            }
            if c == '}' && in_braces && braces == 0 {
                return Ok(i);
            }
            i = self.token(i, n, c, depth, (space, glued), &mut braces)?;
            space = false;
        }
    }

    /// Refuses what may read differently with a token table the guard
    /// does not have: `glued` says the character `c` at `i` (next at `n`)
    /// directly follows a symbol, name or `#` command.
    fn check_glued(&self, i: usize, n: usize, c: char, glued: bool) -> Result<(), LexError> {
        // `whitespace` runs after every token, so a comment opener
        // directly after a symbol (`=--`, `:/-`, `+/-`) starts a comment
        // for Lean with its built-in tokens, but with a longer token in
        // the table (`<-` then `-`, or any token an imported library or
        // a `notation` declares) it does not. The guard has no token
        // table, so the two readings could differ in what they hide:
        // refused. After literals and numbers no token table is
        // involved (Lean's `tokenFn` reads those without it).
        if glued && (c == '-' || c == '/') && self.at(n, '-') {
            return Err(err(
                i,
                &self.src[i..n + 1],
                "a comment opener (`--`, `/-`) directly after a symbol or name: Lean reads it \
                 as a comment or as part of a longer token depending on the tokens in scope, \
                 which the guard cannot know; put a space before the comment",
            ));
        }
        // A symbol core Lean has no token for (`∑` without Mathlib)
        // fails to lex, and Lean's error recovery restarts inside what
        // follows it: a string, raw string, name or `«` opened directly
        // after it may be text for the guard and code for Lean (the
        // `lexdiff` bench: `1∑r#" "` hid the next line from the guard
        // only). Refused after non-ASCII symbols other than core's own.
        if glued
            && matches!(c, '"' | '«' | '`' | 'r')
            && (c != 'r' || self.raw_string_start(n))
            && self.out.last().is_some_and(|t| {
                t.kind == Kind::Symbol
                    && !t.text.is_ascii()
                    && !CORE_UNICODE_TOKENS.contains(&t.text.as_str())
            })
        {
            return Err(err(
                i,
                &self.src[i..n],
                "a literal or name opened directly after a symbol Lean may not know as a token: \
                 Lean's error recovery may read it differently from the guard; put a space \
                 before it",
            ));
        }
        Ok(())
    }

    /// Lean's `whitespace`: white space, a line comment or a block
    /// comment at `i` (character `c`, next at `n`); where code resumes,
    /// or `None` when a token starts at `i`. A doc comment (`/--`, `/-!`)
    /// is a token of its own for Lean and is pushed as one.
    fn whitespace(&mut self, i: usize, n: usize, c: char, space: &mut bool) -> Option<usize> {
        match c {
            ' ' | '\n' | '\t' | '\r' => {
                *space = true;
                Some(n)
            }
            '-' if self.at(n, '-') => {
                let end = self.src[i..].find('\n').map_or(self.src.len(), |k| i + k);
                self.comments.push((i, end));
                *space = true;
                Some(end)
            }
            '/' if self.at(n, '-') => {
                // `whitespace`: after `/-` it looks at one more
                // character X; `/--` and `/-!` are doc-comment tokens
                // whose body starts after the three characters
                // (`commentBody`), and a plain comment's body starts
                // after X too (`s.next input i`): `/-/- -/` is one
                // whole comment, `/--/` opens a doc comment.
                let x = self.ch(n + 1);
                let doc = matches!(x, Some('-') | Some('!'));
                let end = self.block_comment(n + 1 + x.map_or(0, char::len_utf8));
                if doc {
                    self.push(Kind::DocComment, self.src[i..n + 2].into(), i, end, *space);
                    *space = false;
                } else {
                    self.comments.push((i, end));
                    *space = true;
                }
                Some(end)
            }
            _ => None,
        }
    }

    /// The token starting at `i` (character `c`, next at `n`); returns
    /// where it ends. `(space, glued)`: what precedes it. `braces` counts
    /// the `{` open in this run of code.
    fn token(
        &mut self,
        i: usize,
        n: usize,
        c: char,
        depth: u32,
        (space, glued): (bool, bool),
        braces: &mut u32,
    ) -> Result<usize, LexError> {
        Ok(match c {
            '"' => self.string(i, depth, space)?,
            '\'' if !self.at(n, '\'') => {
                // Directly after any symbol, the `'` may end a longer
                // token: Mathlib's `∑'`, `⁻¹'`, core's `]'` (`a[i]'h`),
                // or one a `notation` in the text declares (`('`). So
                // brackets are no exception (the `lexdiff` bench found
                // `0]'"' /- "` hiding a command from the guard only).
                let after_symbol = glued && self.out.last().is_some_and(|t| t.kind == Kind::Symbol);
                self.char_lit(i, space, after_symbol)?
            }
            '\'' => {
                // `''`: a Mathlib token (`f '' s`), or, without it, an
                // error and a character literal from the second `'`.
                self.check_no_hiding_near(n + 1, 3, i, "''")?;
                // Without a `''` token: the first `'` fails, Lean skips
                // it, and the second starts a character literal.
                self.note_resume(n + 1, i, "''");
                self.push(Kind::Symbol, "''".into(), i, n + 1, space);
                n + 1
            }
            '0'..='9' => {
                let e = self.number(i);
                self.push(Kind::Num, self.src[i..e].into(), i, e, space);
                e
            }
            '`' if self.ch(n).is_some_and(|d| is_id_first(d) || d == '«') => {
                let (e, name) = self.ident(n)?;
                self.push(Kind::NameLit, name, i, e, space);
                e
            }
            'r' if self.raw_string_start(n) => self.raw_string(i, space)?,
            c if c == '«' || is_id_first(c) => {
                let (e, name) = self.ident(i)?;
                self.push(Kind::Ident, name, i, e, space);
                e
            }
            '#' if self.ch(n).is_some_and(is_id_first) => {
                let e = self.take_while(n, is_id_rest);
                self.push(Kind::HashCmd, self.src[i..e].into(), i, e, space);
                e
            }
            ':' if self.at(n, '=') => {
                self.push(Kind::Symbol, ":=".into(), i, n + 1, space);
                n + 1
            }
            c if is_invisible(c) => {
                return Err(err(
                    i,
                    &format!("invisible character U+{:04X}", c as u32),
                    "invisible, control and bidirectional-override characters are not allowed \
                     in Lean code outside comments and strings: they make the text read \
                     differently from what Lean parses",
                ));
            }
            '{' | '}' => {
                if c == '{' {
                    *braces += 1;
                } else {
                    *braces = braces.saturating_sub(1);
                }
                self.push(Kind::Symbol, c.to_string(), i, n, space);
                n
            }
            c => {
                self.push(Kind::Symbol, c.to_string(), i, n, space);
                n
            }
        })
    }

    fn take_while(&self, mut i: usize, p: fn(char) -> bool) -> usize {
        while let Some(c) = self.ch(i) {
            if !p(c) {
                break;
            }
            i += c.len_utf8();
        }
        i
    }

    /// `finishCommentBlock`: `i` is just after the opening `/-`. Nested;
    /// unterminated runs to the end (Lean reports it at the end, nothing
    /// after it is read).
    fn block_comment(&self, mut i: usize) -> usize {
        let b = self.src.as_bytes();
        let mut nesting = 1u32;
        while i < b.len() {
            if b[i] == b'-' {
                if b.get(i + 1) == Some(&b'/') {
                    nesting -= 1;
                    if nesting == 0 {
                        return i + 2;
                    }
                    i += 2;
                } else {
                    i += 1;
                }
            } else if b[i] == b'/' {
                if b.get(i + 1) == Some(&b'-') {
                    nesting += 1;
                    i += 2;
                } else {
                    i += 1;
                }
            } else {
                i += 1;
            }
        }
        b.len()
    }

    /// `identFnAux`: dotted parts, each plain or `«escaped»`.
    fn ident(&self, mut i: usize) -> Result<(usize, String), LexError> {
        let mut name = String::new();
        loop {
            if self.at(i, '«') {
                let body = i + '«'.len_utf8();
                let Some(k) = self.src[body..].find('»') else {
                    return Err(err(
                        i,
                        "«",
                        "unterminated `«` identifier escape: Lean would resume reading inside it",
                    ));
                };
                let part = &self.src[body..body + k];
                if let Some(c) = part.chars().find(|&c| is_invisible(c)) {
                    return Err(err(
                        i,
                        &format!("invisible character U+{:04X}", c as u32),
                        "invisible or control characters are not allowed in identifiers",
                    ));
                }
                name.push_str(part);
                i = body + k + '»'.len_utf8();
            } else {
                let e = self.take_while(i + self.ch(i).map_or(0, char::len_utf8), is_id_rest);
                name.push_str(&self.src[i..e]);
                i = e;
            }
            // `isIdCont`: a `.` followed by an identifier start continues the name.
            if self.at(i, '.') && self.ch(i + 1).is_some_and(|d| is_id_first(d) || d == '«') {
                name.push('.');
                i += 1;
            } else {
                return Ok((i, name));
            }
        }
    }
}
