//! Lean backend and process driver: how to start Lean ([`backend`]) in its
//! OS sandbox ([`sandbox`], [`proc`]), how to talk to a warm Lean file
//! worker ([`worker`], over [`framing`] and [`lsp`]) and the one filter
//! between a lease holder and a leased worker ([`leased`]). A worker
//! elaborates only a `leanpool_screen::LeanText`: the caller's text as the
//! guard screened it.

#![deny(missing_docs)]

pub mod backend;
pub mod cold;
mod connection;
mod error;
mod frames;
pub mod framing;
pub mod leased;
pub mod lsp;
pub mod proc;
pub mod project;
pub mod provenance;
mod raw_sender;
pub mod sandbox;
mod session;
pub use frames::IGNORED_NOTIFICATIONS;
pub mod worker;

pub use backend::{BackendKind, LeanCommand, LeanError};
pub use sandbox::{Sandbox, SandboxConfig, SandboxMode};
pub use worker::{
    collect_rpc_refs, RawSender, Worker, WorkerConfig, WorkerError, DEFAULT_START_TIMEOUT,
    DEFAULT_STDERR_LOG_BYTES, DEFAULT_WARMUP,
};
