//! Methods that take their connection over (`lease`): the upgrade (the
//! request, answered once, then the connection is the tunnel's) and the
//! pump between the client's lines and the tunnel.

use super::panic::CatchUnwind;
use super::{reached, send, Answer, InFlight, Phase, ServerOptions, Shared};
use crate::framing::{Frame, FrameReader};
use crate::handler::{rpc_error, CallContext, Handler};
use crate::outbox::Outbox;
use crate::socket;
use crate::tunnel::{Tunnel, TunnelIo, TunnelLine, TunnelOut, TUNNEL_QUEUE};
use leanpool_protocol::{ErrorCode, Request, Response};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::BufReader;
use tokio::sync::{mpsc, watch, Notify};

pub(super) enum Upgraded {
    Tunnel(Box<dyn Tunnel>),
    /// Answered with this error; the connection stays JSON-RPC.
    Refused(Answer),
    Vanished,
}

/// Runs a method that takes its connection over. Nothing more is read from
/// the connection meanwhile (what follows the request belongs to the
/// tunnel); a client that hangs up or a daemon that starts draining ends
/// the wait (the handler's future is dropped).
pub(super) async fn upgrade<H: Handler>(
    req: Request,
    ctx: &CallContext,
    shared: &Arc<Shared<H>>,
    tx: &Outbox,
    idle: bool,
    fd: &impl AsRawFd,
) -> Upgraded {
    let Request {
        id, method, params, ..
    } = req;
    if !idle {
        let msg = format!("`{method}` takes its connection over: send it alone, once the connection's other answers have arrived");
        return Upgraded::Refused(Answer::Error(Response::err(
            id,
            ErrorCode::InvalidRequest,
            msg,
        )));
    }
    if *shared.phase.borrow() != Phase::Running {
        return Upgraded::Refused(Answer::Error(Response::err(
            id,
            ErrorCode::ShuttingDown,
            "the daemon is shutting down",
        )));
    }
    shared.inflight.send_modify(|n| *n += 1);
    let _guard = InFlight(shared.clone());
    let mut phase = shared.phase.subscribe();
    let hung_up = async {
        loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if socket::peer_hung_up(fd) {
                break;
            }
        }
    };
    let t0 = Instant::now();
    let out = tokio::select! {
        // A panicking upgrade is answered like a panicking method; the
        // connection stays JSON-RPC.
        r = CatchUnwind(Box::pin(shared.handler.upgrade(&method, params, ctx))) => r.unwrap_or_else(|why| {
            tracing::error!(conn = ctx.conn, ?id, method, "the upgrade panicked: {why}");
            Err(why.into_rpc_error())
        }),
        _ = reached(&mut phase, Phase::Draining) =>
            Err(rpc_error(ErrorCode::ShuttingDown, "the daemon shut down before this request finished")),
        _ = hung_up => return Upgraded::Vanished,
    };
    let ms = t0.elapsed().as_millis() as u64;
    match out {
        Ok(up) => {
            tracing::info!(conn = ctx.conn, ?id, method, ms, "connection taken over");
            if send(tx, Answer::Ok(id, up.answer)).await.is_err() {
                return Upgraded::Vanished;
            }
            Upgraded::Tunnel(up.tunnel)
        }
        Err(e) => {
            tracing::info!(conn = ctx.conn, ?id, method, ms, code = e.code.code(), error = %e.message, "request failed");
            Upgraded::Refused(Answer::from_result(id, Err(e)))
        }
    }
}

/// Pumps a tunnelled connection: the client's lines to the tunnel (within
/// the caps), the tunnel's lines to the client (through the outbox), until
/// the tunnel ends, the client vanishes or the daemon starts draining.
pub(super) async fn run_tunnel(
    t: Box<dyn Tunnel>,
    reader: &mut FrameReader<BufReader<tokio::net::unix::OwnedReadHalf>>,
    tx: &Outbox,
    unsent_rx: &mut watch::Receiver<usize>,
    gone: &Notify,
    phase: &mut watch::Receiver<Phase>,
    opts: &ServerOptions,
) {
    let (in_tx, in_rx) = mpsc::channel(TUNNEL_QUEUE);
    let out = TunnelOut {
        out: tx.clone(),
        cap: opts.max_unsent_bytes_per_connection,
    };
    // The tunnel's answer has gone out: a panic in it ends the tunnel
    // (its connection closes) and nothing else.
    let mut fut = CatchUnwind(Box::pin(t.run(TunnelIo {
        incoming: in_rx,
        out,
    })));
    let mut in_tx = Some(in_tx);
    loop {
        let backlog = *unsent_rx.borrow_and_update() >= opts.max_unsent_bytes_per_connection;
        let full = in_tx.as_ref().is_some_and(|t| t.capacity() == 0);
        let reading = in_tx.is_some() && !full && !backlog;
        tokio::select! {
            r = &mut fut => {
                if let Err(why) = r {
                    tracing::error!("the tunnel panicked: {why}; closing its connection");
                }
                break
            }
            _ = gone.notified() => break,
            _ = reached(phase, Phase::Draining) => break,
            _ = unsent_rx.changed(), if backlog => {}
            p = async { in_tx.as_ref().expect("checked").reserve().await.map(drop) }, if full => {
                if p.is_err() { in_tx = None }
            }
            f = reader.next_frame(), if reading => match f {
                Ok(Some(Frame::Line(l))) => { let _ = in_tx.as_ref().expect("checked").try_send(TunnelLine::Line(l)); }
                Ok(Some(Frame::TooLarge { len, .. })) => { let _ = in_tx.as_ref().expect("checked").try_send(TunnelLine::TooLarge { len }); }
                // The client closed its side: the tunnel sees the end and
                // finishes (its last lines still go out).
                Ok(None) | Err(_) => in_tx = None,
            },
        }
    }
}
