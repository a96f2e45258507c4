//! The screened document: the one value a caller's text becomes before
//! anything of it reaches Lean.
//!
//! [`screen`] reads the caller's text once (the lexer), applies the
//! guard's rules to that token stream, and builds from the same tokens the
//! document Lean is sent (canonical import header, the rest verbatim,
//! re-tokenized and checked to be the caller's tokens:
//! [`crate::header`]). The result is a [`Screened`], whose fields are
//! private to this module: no other code can make one, so a function that
//! takes a `Screened` can only be handed text that went through [`screen`].
//!
//! What a worker elaborates is a [`LeanText`], which again only this
//! module makes: the screened document itself ([`Screened::to_lean`]), or
//! the screened document with leanpool's own text around it
//! ([`Screened::assemble`], [`Screened::with_trailer`]), checked to read
//! as those pieces. `Worker::elaborate` takes a `LeanText`, so "Lean
//! elaborates exactly what was screened" is a property of the types, not
//! of the call sites.

use super::{rules, Rejection, Screening};
use crate::header::{assemble, Document, DocumentError, Piece};
use crate::lex::Token;

/// A caller's text that passed the guard, with the document built from
/// its tokens. Only [`screen`] makes one.
#[derive(Debug, Clone)]
pub struct Screened {
    caller: String,
    tokens: Vec<Token>,
    document: Document,
    document_tokens: Vec<Token>,
    /// Index in `document_tokens` of the first token after the imports.
    body_start: usize,
    guarded: bool,
}

/// A text a worker may elaborate: a screened document, possibly with
/// text leanpool wrote around it. Only [`Screened`]'s methods make one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeanText {
    text: String,
    offsets: Vec<usize>,
}

impl LeanText {
    /// The text to send.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// For a text made by [`Screened::assemble`], the offset in the text
    /// of each piece, in order (empty for [`Screened::to_lean`]).
    pub fn offsets(&self) -> &[usize] {
        &self.offsets
    }
}

/// Screens a caller's whole text (header and body) under `screening` (a
/// [`Screening`], or a `&GuardPolicy`, which allows nothing beyond the
/// `[guard]` table) and builds the document Lean is sent. `Err` names the
/// first refused construct (in text order) or why no faithful document can
/// be built.
///
/// With `[guard] enabled = false` the guard's rules are skipped (trusted
/// local use, sandbox tests), but the text is still read by the lexer and
/// the document built from its tokens: a text whose reading is ambiguous
/// (an unterminated string, say) is refused even then. Linear in the
/// text's length; never panics.
pub fn screen<'a>(text: &str, screening: impl Into<Screening<'a>>) -> Result<Screened, Rejection> {
    let screening = screening.into();
    let tokens = crate::lex::tokenize(text)
        .map_err(|e| Rejection::at(text, e.offset, e.construct, e.reason))?;
    if screening.policy.enabled {
        rules::check_all(text, &tokens, screening)
            .map_err(|f| Rejection::at(text, f.offset, f.construct, f.reason))?;
    }
    let (document, document_tokens) = Document::build(text, &tokens).map_err(|e| Rejection {
        construct: "document".into(),
        line: 0,
        character: 0,
        reason: e.0,
    })?;
    let body_start = document_tokens.partition_point(|t| t.start < document.header.len());
    Ok(Screened {
        caller: text.to_owned(),
        tokens,
        document,
        document_tokens,
        body_start,
        guarded: screening.policy.enabled,
    })
}

impl Screened {
    /// The caller's text, as screened.
    pub fn caller_text(&self) -> &str {
        &self.caller
    }

    /// The caller's text's tokens (offsets into [`Screened::caller_text`]).
    pub fn tokens(&self) -> &[Token] {
        &self.tokens
    }

    /// The document built from the tokens.
    pub fn document(&self) -> &Document {
        &self.document
    }

    /// The canonical import header: the key of the workers that may
    /// elaborate this document.
    pub fn header(&self) -> &str {
        &self.document.header
    }

    /// The document text's tokens (offsets into `document().text`).
    pub fn document_tokens(&self) -> &[Token] {
        &self.document_tokens
    }

    /// The document's tokens after the import header (offsets into
    /// `document().text`).
    pub fn body_tokens(&self) -> &[Token] {
        &self.document_tokens[self.body_start..]
    }

    /// Whether the guard's rules were applied (`false`: `[guard]
    /// enabled = false`, only lexed).
    pub fn guarded(&self) -> bool {
        self.guarded
    }

    /// The caller's text itself, as screened, to send as it is (a leased
    /// worker's document: `leanpool lsp` and `lease`, whose positions are
    /// the caller's).
    pub fn caller_lean_text(&self) -> LeanText {
        LeanText {
            text: self.caller.clone(),
            offsets: Vec::new(),
        }
    }

    /// The document itself, to elaborate as it is.
    pub fn to_lean(&self) -> LeanText {
        LeanText {
            text: self.document.text.clone(),
            offsets: Vec::new(),
        }
    }

    /// The document followed by `trailer` (leanpool's own commands),
    /// checked to read as the document's tokens followed by the
    /// trailer's: a document that ends inside a comment or command
    /// cannot swallow or change the trailer.
    pub fn with_trailer(&self, trailer: &str) -> Result<LeanText, DocumentError> {
        let len = self.document.text.len();
        self.assemble(&[Piece::Copied(0..len), Piece::Written(trailer)])
    }

    /// A text made of ranges of `document().text` ([`Piece::Copied`]) and
    /// leanpool's own text ([`Piece::Written`]), checked to tokenize
    /// exactly as those pieces do on their own (see
    /// [`crate::header`]). The text must start with the import header.
    pub fn assemble(&self, pieces: &[Piece<'_>]) -> Result<LeanText, DocumentError> {
        let a = assemble(&self.document.text, &self.document_tokens, pieces)?;
        if !a.text.starts_with(&self.document.header) {
            return Err(DocumentError(
                "internal: an assembled text must start with the document's import header".into(),
            ));
        }
        Ok(LeanText {
            text: a.text,
            offsets: a.offsets,
        })
    }
}
