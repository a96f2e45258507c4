//! Wire types shared by every leanpool crate.
//!
//! This crate is the bottom of the dependency graph: plain data with serde
//! derives and no I/O, so the library API, the daemon's JSON-RPC methods and
//! the CLI's `--json` output are the *same* structs and cannot drift apart.
//! [`method`] names each method with its params and result;
//! [`options`] is what every Lean method's params carry beside the text; [`status`]
//! is `status`' result; [`ErrorCode`] the error codes; [`pending`] the
//! request-id bookkeeping both ends of a connection keep (no I/O either).
//! Field order in these structs is the field order on the wire; together
//! with `serde_json`'s deterministic map handling (we never serialize a
//! `HashMap`) this gives byte-identical output for identical answers.

#![deny(missing_docs)]

pub mod check;
pub mod equiv;
pub mod jsonrpc;
pub mod lease;
pub mod lsp_error;
pub mod method;
pub mod options;
pub mod pending;
pub mod provenance;
pub mod status;
pub mod terms;
pub mod tree;
pub mod verify;

pub use check::*;
pub use equiv::*;
pub use jsonrpc::*;
pub use lease::*;
pub use method::Method;
pub use options::{LeanParams, RequestOptions};
pub use provenance::*;
pub use status::*;
pub use terms::*;
pub use tree::*;
pub use verify::*;
