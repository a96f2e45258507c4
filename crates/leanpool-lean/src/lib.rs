//! Lean backend and process driver: how to start Lean ([`backend`]), how
//! to talk to a warm Lean file worker ([`worker`], over [`framing`] and
//! [`lsp`]), how a caller's text becomes a document and back ([`header`],
//! [`text`]), and the library `check` built on them ([`check`]).

#![deny(missing_docs)]

pub mod backend;
pub mod check;
pub mod cold;
mod connection;
mod error;
pub mod framing;
pub mod guard;
pub mod header;
/// Lean's lexical rules: the one token stream the guard screens and the
/// documents sent to Lean are built from.
pub mod lex {
    pub use crate::guard::lexer::{tokenize, Kind, LexError, Token};
}
pub mod leased;
pub mod lsp;
pub mod proc;
pub mod project;
pub mod provenance;
pub mod sandbox;
mod session;
pub use session::IGNORED_NOTIFICATIONS;
pub mod text;
pub mod verdict;
pub mod verify;
pub mod vocab;
pub mod worker;

pub use backend::{BackendKind, LeanCommand, LeanError};
pub use check::{check_on, check_on_with, check_once, header_key};
pub use guard::{screen, LeanText, Screened};
pub use header::{Document, DocumentError, Piece};
pub use sandbox::{Sandbox, SandboxConfig, SandboxMode};
pub use text::LineIndex;
pub use worker::{
    collect_rpc_refs, RawSender, Worker, WorkerConfig, WorkerError, DEFAULT_START_TIMEOUT,
    DEFAULT_STDERR_LOG_BYTES, DEFAULT_WARMUP,
};
