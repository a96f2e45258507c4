//! The daemon behind `leanpool serve`: what it does with a request once the
//! transport ([`leanpool_rpc`]) has framed and decoded it.
//!
//! - [`serve`](mod@serve): the daemon as a library, [`serve()`]`(config, socket,
//!   shutdown)`; `leanpool serve` parses its arguments and calls it.
//! - [`handler`]: [`PoolHandler`], the daemon's state (projects, pools,
//!   cache, leases, `status`); the [`leanpool_rpc::Handler`] serving the
//!   pool methods (`check`, `verify`, `normalize`, `opt`), `gted`,
//!   `status` and `cache_clear` through [`methods`].
//! - [`lease`]: `lease`, a worker leased to a connection that becomes a
//!   guarded tunnel to its LSP (the transport's `Tunnel`).
//! - [`methods`]: the dispatch table, one route per method derived from
//!   its `leanpool_protocol::method` type (the fuzz test drives the exact
//!   decoding the daemon uses) and `PoolHandler`'s `Handler` impl; the
//!   methods the daemon runs itself are served in `served.rs`.
//! - [`gted`]: `gted` and the caps on its trees.
//! - [`cache`]: the result cache (`leanpool_cache`) around every pool
//!   method, opened at start, reported by `status`.
//! - [`config`]: the config file (`[pool]`, `[guard]`, `[sandbox]`,
//!   `[verdict]`, the transport's caps), documented in `docs/protocol.md`.
//!
//! The transport (framing, the server loop and its caps, the socket, the
//! client) knows nothing of the pool; this crate is where the two meet.

#![deny(missing_docs)]

pub mod cache;
pub mod config;
pub mod gted;
pub mod handler;
pub mod lease;
pub mod methods;
pub mod projects;
pub mod serve;
mod served;

pub use config::DaemonConfig;
pub use handler::{BackendInfo, DaemonStatus, PoolHandler, SandboxInfo, StatusResult, VerdictInfo};
pub use serve::{serve, serve_with, Lean, ServeError};
