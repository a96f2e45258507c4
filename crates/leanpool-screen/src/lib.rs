//! Input screening: how a caller's Lean text is read before any Lean
//! process sees it. Lean's lexical rules ([`lex`]), the keyword tables the
//! readers share ([`vocab`]), the default-deny input guard ([`guard`]:
//! [`screen`] is the only maker of a [`Screened`] text and of the
//! [`LeanText`] a worker elaborates), the document built from the one
//! token stream ([`header`]) and UTF-8/UTF-16 positions ([`text`]).
//!
//! Knows no Lean process: the driver (`leanpool-lean`) takes a
//! [`LeanText`], the methods (`leanpool-methods`) a [`Screened`].

#![deny(missing_docs)]

pub mod guard;
pub mod header;
pub mod lex;
pub mod text;
pub mod vocab;

pub use guard::{screen, GuardPolicy, LeanText, Rejection, Screened, Screening};
pub use header::{header_key, Document, DocumentError, Piece};
pub use text::LineIndex;
