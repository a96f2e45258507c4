//! The daemon behind `leanpool serve`: what it does with a request once the
//! transport ([`leanpool_rpc`]) has framed and decoded it.
//!
//! - [`handler`]: [`PoolHandler`], the [`leanpool_rpc::Handler`] serving the
//!   pool methods (`check`, `verify`, `normalize`, `opt`), `gted` and
//!   `status`.
//! - [`lease`]: `lease`, a worker leased to a connection that becomes a
//!   guarded tunnel to its LSP (the transport's `Tunnel`).
//! - [`methods`]: the method names and their parameter decoding, separate
//!   from execution so the fuzz test drives the exact decoding the daemon
//!   uses; the caps on `gted` trees.
//! - [`config`]: the config file (`[pool]`, `[guard]`, `[sandbox]`,
//!   `[verdict]`, the transport's caps), documented in `docs/protocol.md`.
//!
//! The transport (framing, the server loop and its caps, the socket, the
//! client) knows nothing of the pool; this crate is where the two meet.

pub mod config;
pub mod handler;
pub mod lease;
pub mod methods;

pub use config::DaemonConfig;
pub use handler::{BackendInfo, DaemonStatus, PoolHandler, SandboxInfo, StatusResult, VerdictInfo};
