//! The document leanpool sends to Lean for a caller's text, built from the
//! guard's token stream, and the way back to the caller's positions.
//!
//! A warm worker has one document open whose header (the `import`s) has
//! already been elaborated; each request replaces what follows it, so Lean
//! reuses the imported environment. Workers are keyed by the *imports
//! only* (the expensive part): `open`, `set_option`, `universe`,
//! `namespace`, `section`, `variable` … travel with each request as part
//! of its text and are elaborated with it, so every header with the same
//! imports shares the same warm workers.
//!
//! ## How the document is built
//!
//! The caller's text is tokenized once, with Lean's lexical rules
//! ([`crate::lex`], the same stream the guard screened). Its *import
//! header* is the leading run of tokens Lean's `Module.header` reads:
//! optional `module`, optional `prelude`, then `[public] [meta] import
//! [all] Name` commands. The [`Document`] is
//!
//! ```text
//! <canonical imports: one command per line, tokens joined by one space>
//! <spaces up to the column where the last import token ended><the caller's text after it, verbatim>
//! ```
//!
//! so comments and blank lines among the imports do not split workers,
//! and every position after the imports keeps its column (UTF-16) and
//! shifts by whole lines. The document is then tokenized again and must
//! give exactly the caller's tokens (same kinds, same texts, same places
//! after the shift): if it does not, the text is refused (`guard::screen`),
//! so Lean never elaborates a token stream that was not screened.

use crate::lex::{self, Token};
use crate::text::LineIndex;
use leanpool_protocol::{Position, Range};

/// Why leanpool refuses to build a document for a text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DocumentError(pub String);

impl From<lex::LexError> for DocumentError {
    fn from(e: lex::LexError) -> Self {
        DocumentError(format!("rejected `{}`: {}", e.construct, e.reason))
    }
}

/// One piece of an assembled text: copied from a source text, or written
/// by leanpool.
#[derive(Debug, Clone)]
pub enum Piece<'a> {
    /// `source[range]`, copied verbatim.
    Copied(std::ops::Range<usize>),
    /// Text leanpool wrote.
    Written(&'a str),
}

/// A text assembled from pieces and checked ([`assemble`]).
#[derive(Debug, Clone)]
pub(crate) struct Assembly {
    /// The assembled text.
    pub text: String,
    /// Per piece, its offset in `text`.
    pub offsets: Vec<usize>,
    /// The tokens of `text` (equal to the pieces' own, shifted).
    pub tokens: Vec<Token>,
}

/// Assembles `pieces` and checks that the result tokenizes exactly as the
/// pieces do on their own: every copied token is the same token in the
/// result (a copied range never cuts a token, comment or literal, and
/// nothing around it changes how it reads), and leanpool's own text reads
/// as itself. Returns the text, per piece its offset, and its tokens.
/// Crate-private: outside this crate, texts for Lean are assembled only
/// from a screened document ([`crate::guard::Screened::assemble`]).
pub(crate) fn assemble(
    source: &str,
    source_tokens: &[Token],
    pieces: &[Piece<'_>],
) -> Result<Assembly, DocumentError> {
    let mut out = String::new();
    let mut offsets = Vec::with_capacity(pieces.len());
    let mut expected: Vec<Token> = Vec::new();
    for p in pieces {
        let at = out.len();
        offsets.push(at);
        match p {
            Piece::Copied(r) => {
                if let Some(t) = cut_token(source_tokens, r) {
                    return Err(DocumentError(format!(
                        "internal: a copied range cuts the token `{}`",
                        t.text
                    )));
                }
                let first = source_tokens.partition_point(|t| t.start < r.start);
                expected.extend(
                    source_tokens[first..]
                        .iter()
                        .take_while(|t| t.start < r.end)
                        .filter(|t| t.end <= r.end)
                        .map(|t| shifted(t, at as isize - r.start as isize)),
                );
                out.push_str(&source[r.clone()]);
            }
            Piece::Written(w) => {
                let toks = lex::tokenize(w)?;
                expected.extend(toks.iter().map(|t| shifted(t, at as isize)));
                out.push_str(w);
            }
        }
    }
    let got = lex::tokenize(&out)?;
    let same = |a: &Token, b: &Token| {
        a.kind == b.kind
            && a.text == b.text
            && a.start == b.start
            && a.end == b.end
            && a.nested == b.nested
    };
    if got.len() != expected.len() || !got.iter().zip(&expected).all(|(a, b)| same(a, b)) {
        let at = got
            .iter()
            .zip(&expected)
            .position(|(a, b)| !same(a, b))
            .unwrap_or(got.len().min(expected.len()));
        return Err(DocumentError(format!(
            "the text leanpool would send to Lean does not read like the caller's text \
             (token {at}: {:?} where {:?} was screened); refused",
            got.get(at).map(|t| &t.text),
            expected.get(at).map(|t| &t.text)
        )));
    }
    Ok(Assembly {
        text: out,
        offsets,
        tokens: got,
    })
}

/// A token that `r` cuts (starts before `r` and ends inside it, or starts
/// inside and ends after it).
fn cut_token<'t>(toks: &'t [Token], r: &std::ops::Range<usize>) -> Option<&'t Token> {
    toks.iter()
        .find(|t| (t.start < r.start && t.end > r.start) || (t.start < r.end && t.end > r.end))
}

fn shifted(t: &Token, by: isize) -> Token {
    Token {
        start: (t.start as isize + by) as usize,
        end: (t.end as isize + by) as usize,
        ..t.clone()
    }
}

/// Token indices of the import header: `module`? `prelude`? then
/// `public`? `meta`? `import` `all`? `Name`, as Lean's `Module.header`
/// reads it. Returns the index one past the last header token and the
/// start index of each command.
fn import_header(toks: &[Token], src: &str) -> (usize, Vec<std::ops::Range<usize>>) {
    let word = |j: usize, w: &str| {
        toks.get(j)
            .is_some_and(|t| t.kind == lex::Kind::Ident && &src[t.start..t.end] == w)
    };
    let mut commands = Vec::new();
    let mut j = 0;
    for w in ["module", "prelude"] {
        if word(j, w) {
            commands.push(j..j + 1);
            j += 1;
        }
    }
    loop {
        let mut k = j;
        for m in ["public", "meta"] {
            if word(k, m) {
                k += 1;
            }
        }
        if !word(k, "import") {
            break;
        }
        k += 1;
        if word(k, "all") {
            k += 1;
        }
        if !toks.get(k).is_some_and(|t| t.kind == lex::Kind::Ident) {
            break;
        }
        commands.push(j..k + 1);
        j = k + 1;
    }
    (j, commands)
}

/// The text sent to Lean for one caller's text, and the way back (see the
/// module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    /// The canonical import header: the worker's key and the didOpen text.
    pub header: String,
    /// Full document text: `header`, padding, the caller's text after the
    /// imports.
    pub text: String,
    /// Byte offset in the caller's text where the verbatim part starts.
    cut: usize,
    /// The caller's position of `cut`.
    cut_pos: Position,
    /// For every line of `header`, the caller's position of its first token.
    header_origin: Vec<Position>,
}

impl Document {
    /// Lexes the caller's text and builds the document Lean is sent
    /// (canonical imports, then the text after them, columns kept);
    /// `Err` when the text cannot be tokenized or rebuilt faithfully.
    /// Crate-private: documents for Lean come from [`crate::guard::screen`].
    pub(crate) fn new(caller_text: &str) -> Result<Document, DocumentError> {
        let toks = lex::tokenize(caller_text)?;
        Ok(Self::build(caller_text, &toks)?.0)
    }

    /// [`Document::new`] from the caller's token stream (already lexed);
    /// also returns the document text's tokens (checked to be the
    /// caller's, shifted).
    pub(crate) fn build(
        caller_text: &str,
        toks: &[Token],
    ) -> Result<(Document, Vec<Token>), DocumentError> {
        let (end, commands) = import_header(toks, caller_text);
        let index = LineIndex::new(caller_text);
        let mut header = String::new();
        let mut header_origin = Vec::new();
        for c in &commands {
            let words: Vec<&str> = toks[c.clone()]
                .iter()
                .map(|t| &caller_text[t.start..t.end])
                .collect();
            header.push_str(&words.join(" "));
            header.push('\n');
            header_origin.push(index.position(toks[c.start].start));
        }
        let cut = if end == 0 { 0 } else { toks[end - 1].end };
        let cut_pos = index.position(cut);
        let pad = " ".repeat(cut_pos.character as usize);
        let pieces = [
            Piece::Written(&header),
            Piece::Written(&pad),
            Piece::Copied(cut..caller_text.len()),
        ];
        let sent = assemble(caller_text, toks, &pieces)?;
        // The canonical header reads as the caller's import tokens (the
        // header's own tokens are the first of the checked document's).
        let same = |a: &Token, b: &Token| a.kind == b.kind && a.text == b.text;
        let header_tokens = sent.tokens.partition_point(|t| t.start < header.len());
        if header_tokens != end
            || !sent.tokens[..end]
                .iter()
                .zip(&toks[..end])
                .all(|(a, b)| same(a, b))
        {
            return Err(DocumentError(
                "internal: the canonical import header does not read like the caller's".into(),
            ));
        }
        let doc = Document {
            header,
            text: sent.text,
            cut,
            cut_pos,
            header_origin,
        };
        Ok((doc, sent.tokens))
    }

    /// Line of `text` on which the caller's text after the imports starts.
    pub fn body_line(&self) -> u32 {
        self.header_origin.len() as u32
    }

    /// Byte offset in the caller's text where the part sent verbatim
    /// starts (the end of the last import token, or 0).
    pub fn caller_cut(&self) -> usize {
        self.cut
    }

    /// Position in `text` of a byte offset counted from the end of
    /// `header` (the part of `text` after the canonical import header).
    pub fn body_offset_position(&self, offset: usize) -> Position {
        LineIndex::new(&self.text).position(self.header.len() + offset)
    }

    /// Maps a position in `text` to the caller's text.
    pub fn to_caller(&self, pos: Position) -> Position {
        let body_line = self.body_line();
        if pos.line >= body_line {
            Position {
                line: pos.line - body_line + self.cut_pos.line,
                character: pos.character,
            }
        } else {
            let o = self.header_origin[pos.line as usize];
            Position {
                line: o.line,
                character: o.character + pos.character,
            }
        }
    }

    /// A range of the document mapped back to the caller's text.
    pub fn range_to_caller(&self, r: Range) -> Range {
        Range {
            start: self.to_caller(r.start),
            end: self.to_caller(r.end),
        }
    }

    /// Maps a position in the caller's text into `text` (`None` for a
    /// position among the imports that is not on an import command's line).
    pub fn from_caller(&self, pos: Position) -> Option<Position> {
        if (pos.line, pos.character) >= (self.cut_pos.line, self.cut_pos.character) {
            Some(Position {
                line: pos.line - self.cut_pos.line + self.body_line(),
                character: pos.character,
            })
        } else {
            let line = self.header_origin.iter().position(|o| o.line == pos.line)?;
            let o = self.header_origin[line];
            Some(Position {
                line: line as u32,
                character: pos.character.saturating_sub(o.character),
            })
        }
    }
}

/// The worker header a text needs (its canonical import header): the
/// pool's key. A text no document can be built for (the guard refuses it
/// anyway) gets the empty header.
pub fn header_key(text: &str) -> String {
    Document::new(text).map(|d| d.header).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(t: &str) -> Document {
        Document::new(t).unwrap()
    }

    #[test]
    fn no_imports_is_sent_verbatim() {
        let d = doc("open Nat
theorem t : True := trivial
");
        assert_eq!(d.header, "");
        assert_eq!(
            d.text,
            "open Nat
theorem t : True := trivial
"
        );
        assert_eq!(doc("").text, "");
    }

    #[test]
    fn key_is_the_imports_and_the_rest_keeps_its_columns() {
        let caller = "-- leading\nimport Init\n\n/- block\n   comment -/\nimport   Lean.Data.Json -- x\nopen Nat\nset_option pp.all true\n\ntheorem t : 𝓝 := by\r\n  bad\n";
        let d = doc(caller);
        assert_eq!(d.header, "import Init\nimport Lean.Data.Json\n");
        let rest = &caller[caller.find(" -- x").unwrap()..];
        assert_eq!(
            d.text,
            format!(
                "{}{}{rest}",
                d.header,
                " ".repeat("import   Lean.Data.Json".len())
            )
        );
        assert_eq!(d.body_line(), 2);
        // Every token after the imports: same UTF-16 position, lines shifted.
        let (ci, di) = (LineIndex::new(caller), LineIndex::new(&d.text));
        for word in ["open", "set_option", "theorem", "bad"] {
            let c = ci.position(caller.find(word).unwrap());
            let s = di.position(d.text.find(word).unwrap());
            assert_eq!(d.to_caller(s), c, "{word}");
            assert_eq!(d.from_caller(c), Some(s), "{word}");
        }
        // Header lines map to their command's first token.
        let p = |line, character| Position { line, character };
        assert_eq!(d.to_caller(p(1, 7)), p(5, 7));
        assert_eq!(d.from_caller(p(0, 0)), None);
    }

    #[test]
    fn headers_with_the_same_imports_share_a_key() {
        let a = doc("import Init\n-- x\nopen Nat\ntheorem a : True := trivial");
        let b = doc("/- y -/\nimport Init  \n\nopen Real\nset_option maxHeartbeats 0\n\ntheorem b : True := trivial");
        assert_eq!(a.header, b.header);
        assert_eq!(a.header, "import Init\n");
        let c = doc("module\npublic import Init\nmeta import all Lean\nopen X");
        assert_eq!(
            c.header,
            "module\npublic import Init\nmeta import all Lean\n"
        );
        // An import after another command is not header (Lean refuses it).
        assert_eq!(doc("open Nat\nimport Init").header, "");
    }

    /// Issue 10: the old header split stripped comments line by line, so
    /// a `--` inside a string that spans lines was dropped from the text
    /// sent to Lean and the string ended elsewhere. The document is now
    /// the caller's tokens, checked.
    #[test]
    fn attack_header_comment_stripper_string_spanning_lines() {
        let t = "open Nat \"\n--\"\n\" #eval (424401 : Nat) \"\n";
        assert_eq!(doc(t).text, t);
        let t = "import Init \"\n--\"\n\" #eval (424401 : Nat) \"\n";
        let d = doc(t);
        assert_eq!(d.header, "import Init\n");
        assert!(
            d.text.ends_with("\"\n--\"\n\" #eval (424401 : Nat) \"\n"),
            "{:?}",
            d.text
        );
    }

    #[test]
    fn assemble_refuses_pieces_that_change_how_copied_text_reads() {
        let src = "a -- b\nc";
        let toks = lex::tokenize(src).unwrap();
        // Copying the comment without its line end swallows written text.
        let r = assemble(
            src,
            &toks,
            &[Piece::Copied(0..6), Piece::Written(" := d\n")],
        );
        assert!(r.is_err(), "{r:?}");
        let r = assemble(
            src,
            &toks,
            &[Piece::Copied(0..7), Piece::Written(" := d\n")],
        )
        .unwrap();
        assert_eq!(r.text, "a -- b\n := d\n");
        // A range that cuts a literal is refused.
        let src = "x \"s t\" y";
        let toks = lex::tokenize(src).unwrap();
        assert!(assemble(src, &toks, &[Piece::Copied(0..5)]).is_err());
    }
}
