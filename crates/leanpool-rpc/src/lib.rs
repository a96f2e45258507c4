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
//!
//! A round trip over a real Unix socket, with a handler that serves one
//! method of its own (`add`) beside the server's `ping`:
//!
//! ```
//! use leanpool_protocol::{method, ErrorCode, RpcError};
//! use leanpool_rpc::handler::{method_not_found, params, result};
//! use leanpool_rpc::{CallContext, Client, Handler, Server, ServerOptions};
//! use serde_json::{json, value::RawValue, Value};
//! use std::time::Duration;
//!
//! struct Adder;
//!
//! #[derive(serde::Deserialize)]
//! struct Add {
//!     a: i64,
//!     b: i64,
//! }
//!
//! impl Handler for Adder {
//!     async fn call(&self, method: &str, p: Value, _: &CallContext) -> Result<Box<RawValue>, RpcError> {
//!         match method {
//!             "add" => {
//!                 let Add { a, b } = params(method, p)?;
//!                 result(&a.saturating_add(b))
//!             }
//!             _ => Err(method_not_found(method)),
//!         }
//!     }
//!
//!     async fn shutdown(&self, _deadline: Duration) {}
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let socket = dir.path().join("lp.sock");
//! let server = Server::bind(ServerOptions::new(&socket), Adder)?;
//! let stop = server.shutdown_handle();
//! let serving = tokio::spawn(server.run());
//!
//! let client = Client::connect(&socket).await?;
//! let echo = client.request::<method::Ping>(&json!({"hello": [1, 2]})).await?;
//! assert_eq!(echo, json!({"hello": [1, 2]}));
//! assert_eq!(client.call("add", json!({"a": 2, "b": 3})).await?, json!(5));
//! // Errors come back with their code.
//! let e = client.call("add", json!({"a": "two"})).await.unwrap_err();
//! assert_eq!(e.code(), Some(ErrorCode::InvalidParams));
//! let e = client.call("mul", json!({})).await.unwrap_err();
//! assert_eq!(e.code(), Some(ErrorCode::MethodNotFound));
//!
//! drop(client);
//! stop.shutdown();
//! serving.await??; // drains, then removes the socket file
//! assert!(!socket.exists());
//! # Ok(())
//! # }
//! ```

#![deny(missing_docs)]

pub mod client;
pub mod framing;
pub mod handler;
mod outbox;
pub mod request;
pub mod server;
pub mod socket;
pub mod tunnel;

pub use client::{Client, ClientError};
pub use handler::{CallContext, Handler, PeerCred};
pub use server::{Server, ServerOptions, ShutdownHandle};
pub use socket::BindError;
pub use tunnel::{Tunnel, TunnelIo, TunnelLine, TunnelOut, Upgrade};
