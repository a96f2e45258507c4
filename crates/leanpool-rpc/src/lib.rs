//! leanpool's transport: newline-delimited JSON-RPC 2.0 over a Unix socket.
//!
//! - [`server`]: accept loop, peer-uid check, per-request tasks, graceful
//!   shutdown; generic over a [`Handler`] so it is testable without Lean.
//! - [`client`]: an async client with pipelined requests on one connection.
//! - [`framing`] and [`request`]: bounded line reading and envelope
//!   decoding, pure enough to fuzz in-process.
//!
//! The wire format is documented in `docs/protocol.md`. The daemon's
//! handler (pool methods, `gted`, `status`) and its config are the
//! `leanpool-daemon` crate: this one does not know the pool.

pub mod client;
pub mod framing;
pub mod handler;
pub mod request;
pub mod server;
pub mod socket;
pub mod tunnel;

pub use client::{Client, ClientError};
pub use handler::{CallContext, Handler, PeerCred};
pub use server::{Server, ServerOptions, ShutdownHandle};
pub use socket::BindError;
pub use tunnel::{Tunnel, TunnelIo, TunnelLine, TunnelOut, Upgrade};
