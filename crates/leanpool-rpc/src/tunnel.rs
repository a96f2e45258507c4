//! Connections a handler takes over (`lease`): after the method's answer,
//! the connection stops carrying JSON-RPC requests to the daemon and
//! carries whatever the handler's [`Tunnel`] speaks, one line each way,
//! until either side ends.
//!
//! The server keeps its caps on a tunnelled connection: lines longer than
//! `max_request_bytes` are not handed over (only their length), at most
//! [`TUNNEL_QUEUE`] lines wait between the socket and the tunnel (the
//! server stops reading the socket while they do), and while more than
//! `max_unsent_bytes_per_connection` bytes wait to be written to the
//! client, the server stops reading from it ([`TunnelOut::backlogged`] lets
//! the tunnel stop producing too).

use crate::outbox::Outbox;
use serde_json::value::RawValue;
use std::future::Future;
use std::pin::Pin;
use tokio::sync::mpsc;

/// Lines read from a tunnelled connection that wait for the tunnel.
pub const TUNNEL_QUEUE: usize = 16;

/// What a handler's `upgrade` gives the server: the answer to send, then
/// the tunnel that takes the connection over.
pub struct Upgrade {
    /// The method's result (sent as its answer before the tunnel starts).
    pub answer: Box<RawValue>,
    /// What carries the connection after the answer.
    pub tunnel: Box<dyn Tunnel>,
}

/// The handler's side of a tunnelled connection.
pub trait Tunnel: Send + 'static {
    /// Carries the connection until the client's side ends
    /// ([`TunnelIo::incoming`] closes) or the tunnel decides to end.
    /// Dropped unfinished when the daemon shuts down or the client
    /// vanishes: everything the tunnel holds must be released on drop.
    fn run(self: Box<Self>, io: TunnelIo) -> Pin<Box<dyn Future<Output = ()> + Send>>;
}

/// One line from the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TunnelLine {
    /// A line (without its `\n`), at most `max_request_bytes` long.
    Line(Vec<u8>),
    /// A line longer than `max_request_bytes`: read and dropped.
    TooLarge {
        /// The line's length in bytes.
        len: usize,
    },
}

/// Both directions of a tunnelled connection, handed to
/// [`Tunnel::run`].
pub struct TunnelIo {
    /// The client's lines in order; closed when the client closed its
    /// side of the connection.
    pub incoming: mpsc::Receiver<TunnelLine>,
    /// The way back to the client.
    pub out: TunnelOut,
}

/// The way to the client: the connection's outbox, the same one the
/// server's answers take, so lines are counted as unsent until written.
#[derive(Clone)]
pub struct TunnelOut {
    pub(crate) out: Outbox,
    pub(crate) cap: usize,
}

impl TunnelOut {
    /// Queues one line (a `\n` is added). `Err` when the client is gone.
    pub async fn send(&self, mut line: Vec<u8>) -> Result<(), ()> {
        line.push(b'\n');
        self.out.send_line(line).await
    }

    /// More than `max_unsent_bytes_per_connection` bytes wait for the
    /// client: stop producing until [`TunnelOut::drained`].
    pub fn backlogged(&self) -> bool {
        self.out.unsent() >= self.cap
    }

    /// Resolves once the backlog is under the cap.
    pub async fn drained(&self) {
        let mut rx = self.out.subscribe_unsent();
        let cap = self.cap;
        let _ = rx.wait_for(|u| *u < cap).await;
    }
}
