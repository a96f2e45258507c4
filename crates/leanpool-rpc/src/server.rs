//! The accept loop, one task per connection, one task per request, and the
//! three-phase shutdown (running -> draining -> closed).
//!
//! Invariant: every request that decodes gets exactly one answer, unless its
//! client is gone (then its work is cancelled by dropping the future).

use crate::framing::FrameReader;
use crate::handler::{result, rpc_error, CallContext, Handler, PeerCred};
use crate::outbox::Outbox;
use crate::request::{decode, Decoded};
use crate::socket::{self, BindError, SocketFile};
use leanpool_protocol::method::{self, Method, ShutdownResult};
use leanpool_protocol::{ErrorCode, Id, Request, Response, RpcError};
use serde::Serialize;
use serde_json::value::RawValue;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::sync::{watch, Notify};
use tokio::task::JoinSet;

mod panic;
mod upgrade;

use panic::CatchUnwind;
use upgrade::{run_tunnel, upgrade, Upgraded};

/// Transport settings (the daemon fills them from its config file).
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Path of the Unix socket to create (a stale socket file there is
    /// replaced, a live one refused).
    pub socket: PathBuf,
    /// Permission bits of the socket file (connecting needs write access).
    pub socket_mode: u32,
    /// Peers whose uid is not listed are answered `UNAUTHORIZED` and dropped.
    pub allowed_uids: Vec<u32>,
    /// The only uid that may call `shutdown`.
    pub owner_uid: u32,
    /// Longest request line accepted; a longer one is answered
    /// `REQUEST_TOO_LARGE` (addressed to its id when that can be read).
    pub max_request_bytes: usize,
    /// Past this many unanswered requests the server stops reading from the
    /// connection until one finishes (backpressure, bounded memory).
    pub max_inflight_per_connection: usize,
    /// Past this many bytes of answers queued for a connection and not yet
    /// written to it, the server stops reading from that connection until
    /// the client reads: a client that pipelines requests and never reads
    /// the answers cannot make the daemon buffer without limit.
    pub max_unsent_bytes_per_connection: usize,
    /// Connections served at once. One more gets one `OVERLOADED` error
    /// line (id null) and is closed.
    pub max_connections: usize,
    /// How long shutdown lets in-flight requests finish.
    pub shutdown_deadline: Duration,
}

impl ServerOptions {
    /// Defaults: mode 0600, only our own uid, 4 MiB requests, 1024
    /// requests and 64 MiB of unsent answers per connection, 256
    /// connections, 10 s deadline.
    pub fn new(socket: impl Into<PathBuf>) -> Self {
        let uid = nix::unistd::geteuid().as_raw();
        ServerOptions {
            socket: socket.into(),
            socket_mode: 0o600,
            allowed_uids: vec![uid],
            owner_uid: uid,
            max_request_bytes: 4 << 20,
            max_inflight_per_connection: 1024,
            max_unsent_bytes_per_connection: 64 << 20,
            max_connections: 256,
            shutdown_deadline: Duration::from_secs(10),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Phase {
    Running,
    /// Not accepting; new requests get `SHUTTING_DOWN`; in-flight ones run.
    Draining,
    /// Deadline passed: still-pending requests are answered `SHUTTING_DOWN`.
    Closed,
}

/// Resolves once the server is at `phase` or later.
async fn reached(rx: &mut watch::Receiver<Phase>, phase: Phase) {
    let _ = rx.wait_for(|p| *p >= phase).await;
}

struct Shared<H> {
    handler: H,
    opts: ServerOptions,
    phase: watch::Sender<Phase>,
    inflight: watch::Sender<usize>,
    conns: AtomicU64,
}

/// Starts a graceful shutdown of the server it came from; cheap to clone,
/// usable from signal handlers and tests.
#[derive(Clone)]
pub struct ShutdownHandle(watch::Sender<Phase>);

impl ShutdownHandle {
    /// Starts draining: no new connections, new requests answered
    /// `SHUTTING_DOWN`, in-flight ones run until `shutdown_deadline`.
    /// Calling it again does nothing.
    pub fn shutdown(&self) {
        self.0.send_if_modified(|p| {
            let changed = *p == Phase::Running;
            if changed {
                *p = Phase::Draining;
            }
            changed
        });
    }
}

/// A bound socket and the handler serving it; [`Server::run`] serves
/// until shut down.
pub struct Server<H: Handler> {
    listener: std::os::unix::net::UnixListener,
    file: SocketFile,
    shared: Arc<Shared<H>>,
}

impl<H: Handler> Server<H> {
    /// Binds the socket (handling a stale one); call [`Server::run`] to serve.
    pub fn bind(opts: ServerOptions, handler: H) -> Result<Self, BindError> {
        let (listener, file) = socket::bind(&opts.socket, opts.socket_mode)?;
        let shared = Arc::new(Shared {
            handler,
            opts,
            phase: watch::channel(Phase::Running).0,
            inflight: watch::channel(0).0,
            conns: AtomicU64::new(0),
        });
        Ok(Server {
            listener,
            file,
            shared,
        })
    }

    /// A handle that starts this server's graceful shutdown.
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        ShutdownHandle(self.shared.phase.clone())
    }

    /// Serves until shut down (by a [`ShutdownHandle`] or the `shutdown`
    /// method), then drains and removes the socket file.
    pub async fn run(self) -> std::io::Result<()> {
        let listener = tokio::net::UnixListener::from_std(self.listener)?;
        let shared = self.shared;
        let mut phase = shared.phase.subscribe();
        let mut conns = JoinSet::new();
        tracing::info!(socket = %shared.opts.socket.display(), "listening");
        loop {
            tokio::select! {
                r = listener.accept() => match r {
                    Ok((stream, _)) if conns.len() >= shared.opts.max_connections => {
                        // Answered off the accept loop; not counted.
                        let max = shared.opts.max_connections;
                        tracing::warn!(max, "connection limit reached; refusing a connection");
                        let msg = format!("the daemon serves at most {max} connections at once; retry later");
                        tokio::spawn(refuse(stream, ErrorCode::Overloaded, msg));
                    }
                    Ok((stream, _)) => {
                        let n = shared.conns.fetch_add(1, Ordering::Relaxed);
                        conns.spawn(connection(stream, n, shared.clone()));
                    }
                    Err(e) => {
                        // EMFILE and friends: back off rather than spin.
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                },
                _ = reached(&mut phase, Phase::Draining) => break,
                Some(_) = conns.join_next(), if !conns.is_empty() => {}
            }
        }
        drop(listener);
        let deadline = shared.opts.shutdown_deadline;
        tracing::info!(
            deadline_ms = deadline.as_millis() as u64,
            in_flight = *shared.inflight.borrow(),
            "draining"
        );
        let mut inflight = shared.inflight.subscribe();
        let drained = async {
            tokio::time::timeout(deadline, inflight.wait_for(|n| *n == 0))
                .await
                .is_ok()
        };
        let ((), drained) = tokio::join!(shared.handler.shutdown(deadline), drained);
        if !drained && *shared.inflight.borrow() > 0 {
            tracing::warn!(
                in_flight = *shared.inflight.borrow(),
                "deadline passed; answering the rest SHUTTING_DOWN"
            );
        }
        shared.phase.send_replace(Phase::Closed);
        let closing = async { while conns.join_next().await.is_some() {} };
        if tokio::time::timeout(Duration::from_secs(2), closing)
            .await
            .is_err()
        {
            conns.abort_all();
        }
        self.file.remove_file();
        tracing::info!("stopped");
        Ok(())
    }
}

/// One client connection: a reader loop (this task), a writer task, and a
/// task per request.
async fn connection<H: Handler>(stream: UnixStream, conn: u64, shared: Arc<Shared<H>>) {
    let Some((stream, peer)) = admit(stream, conn, &shared.opts).await else {
        return;
    };
    let (rd, wr) = stream.into_split();
    let raw_fd = rd.as_ref().as_raw_fd();
    let gone = Arc::new(Notify::new());
    let (tx, writer) = Outbox::start(wr, gone.clone());
    let mut unsent_rx = tx.subscribe_unsent();
    let opts = &shared.opts;
    let mut reader = FrameReader::new(
        BufReader::with_capacity(64 << 10, rd),
        opts.max_request_bytes,
    );
    let mut tasks = JoinSet::new();
    let mut phase = shared.phase.subscribe();
    let ctx = CallContext { peer, conn };
    let mut vanished = false;
    let mut tunnel = None;
    loop {
        let backlog = *unsent_rx.borrow_and_update() >= opts.max_unsent_bytes_per_connection;
        let room = tasks.len() < opts.max_inflight_per_connection && !backlog;
        tokio::select! {
            _ = gone.notified() => { vanished = true; break }
            _ = reached(&mut phase, Phase::Closed) => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            // The writer drained some answers: look at the backlog again.
            _ = unsent_rx.changed(), if backlog => {}
            f = reader.next_frame(), if room => match f {
                Ok(Some(frame)) => {
                    let reply = match decode(&frame, opts.max_request_bytes) {
                        Decoded::Blank => None,
                        Decoded::Reply(r) => Some(Answer::Error(r)),
                        Decoded::Call(req) if shared.handler.upgrades(&req.method) => {
                            match upgrade(req, &ctx, &shared, &tx, tasks.is_empty(), &raw_fd).await {
                                Upgraded::Tunnel(t) => { tunnel = Some(t); break }
                                Upgraded::Refused(a) => Some(a),
                                Upgraded::Vanished => { vanished = true; break }
                            }
                        }
                        Decoded::Call(req) => start(req, &ctx, &shared, &tx, &mut tasks),
                    };
                    if let Some(r) = reply {
                        if send(&tx, r).await.is_err() { vanished = true; break }
                    }
                }
                Ok(None) => break, // EOF: maybe only a half-close; answers still go out
                Err(e) => { tracing::debug!(conn, error = %e, "read failed"); vanished = true; break }
            },
        }
    }
    if let Some(t) = tunnel {
        // No request is in flight: `upgrade` runs only on an idle connection.
        run_tunnel(t, &mut reader, &tx, &mut unsent_rx, &gone, &mut phase, opts).await;
        tracing::debug!(conn, "tunnel closed");
    }
    finish_requests(&mut tasks, vanished, &gone, &raw_fd, conn).await;
    drop(tx);
    let _ = writer.await;
    drop(reader);
    tracing::debug!(conn, "closed");
}

/// The peer of a new connection if its uid may use the socket; a peer
/// that may not is answered `UNAUTHORIZED` and dropped.
async fn admit(
    stream: UnixStream,
    conn: u64,
    opts: &ServerOptions,
) -> Option<(UnixStream, PeerCred)> {
    let peer = match socket::peer_cred(&stream) {
        Ok(p) => p,
        Err(e) => {
            tracing::warn!(conn, error = %e, "no peer credentials; dropping");
            return None;
        }
    };
    if !opts.allowed_uids.contains(&peer.uid) {
        tracing::warn!(
            conn,
            uid = peer.uid,
            pid = peer.pid,
            "uid not allowed; rejecting"
        );
        refuse(
            stream,
            ErrorCode::Unauthorized,
            format!("uid {} may not use this socket", peer.uid),
        )
        .await;
        return None;
    }
    tracing::debug!(conn, uid = peer.uid, pid = peer.pid, "connected");
    Some((stream, peer))
}

/// Reading is over: finishes the connection's pending requests unless the
/// peer is gone (`vanished`, or found gone meanwhile), in which case they
/// are cancelled (their futures dropped).
async fn finish_requests(
    tasks: &mut JoinSet<()>,
    mut vanished: bool,
    gone: &Notify,
    fd: &impl AsRawFd,
    conn: u64,
) {
    while !vanished && !tasks.is_empty() {
        tokio::select! {
            r = tasks.join_next() => if r.is_none() { break },
            _ = gone.notified() => vanished = true,
            _ = tokio::time::sleep(Duration::from_millis(50)) => vanished = socket::peer_hung_up(fd),
        }
    }
    if vanished && !tasks.is_empty() {
        tracing::info!(
            conn,
            pending = tasks.len(),
            "client went away; cancelling its requests"
        );
    }
    tasks.shutdown().await;
}

/// Routes one decoded request: server-level methods are answered here (the
/// returned response), the rest run in their own task.
fn start<H: Handler>(
    req: Request,
    ctx: &CallContext,
    shared: &Arc<Shared<H>>,
    tx: &Outbox,
    tasks: &mut JoinSet<()>,
) -> Option<Answer> {
    let Request {
        id, method, params, ..
    } = req;
    match method.as_str() {
        method::Ping::NAME => return Some(Answer::from_result(id, result(&params))),
        method::Shutdown::NAME => {
            if ctx.peer.uid != shared.opts.owner_uid {
                let msg = format!(
                    "only the daemon's owner (uid {}) may shut it down",
                    shared.opts.owner_uid
                );
                return Some(Answer::Error(Response::err(
                    id,
                    ErrorCode::Unauthorized,
                    msg,
                )));
            }
            tracing::info!(conn = ctx.conn, uid = ctx.peer.uid, "shutdown requested");
            ShutdownHandle(shared.phase.clone()).shutdown();
            return Some(Answer::from_result(
                id,
                result(&ShutdownResult {
                    shutting_down: true,
                }),
            ));
        }
        _ => {}
    }
    if *shared.phase.borrow() != Phase::Running {
        return Some(Answer::Error(Response::err(
            id,
            ErrorCode::ShuttingDown,
            "the daemon is shutting down",
        )));
    }
    shared.inflight.send_modify(|n| *n += 1);
    let guard = InFlight(shared.clone());
    let (tx, ctx, shared) = (tx.clone(), ctx.clone(), shared.clone());
    tasks.spawn(async move {
        let _guard = guard;
        let t0 = Instant::now();
        let mut phase = shared.phase.subscribe();
        let out = tokio::select! {
            r = CatchUnwind(Box::pin(shared.handler.call(&method, params, &ctx))) => r.unwrap_or_else(|why| {
                tracing::error!(conn = ctx.conn, ?id, method, "the request's task panicked: {why}");
                Err(why.into_rpc_error())
            }),
            _ = reached(&mut phase, Phase::Closed) =>
                Err(rpc_error(ErrorCode::ShuttingDown, "the daemon shut down before this request finished")),
        };
        let ms = t0.elapsed().as_millis() as u64;
        match &out {
            Ok(_) => tracing::debug!(conn = ctx.conn, ?id, method, ms, "answered"),
            Err(e) => tracing::info!(conn = ctx.conn, ?id, method, ms, code = e.code.code(), error = %e.message, "request failed"),
        }
        let _ = send(&tx, Answer::from_result(id, out)).await;
    });
    None
}

/// Decrements the server's in-flight count when a request task ends,
/// however it ends (answered, cancelled or aborted).
struct InFlight<H: Handler>(Arc<Shared<H>>);

impl<H: Handler> Drop for InFlight<H> {
    fn drop(&mut self) {
        self.0.inflight.send_modify(|n| *n -= 1);
    }
}

/// One answer on its way to the writer.
enum Answer {
    /// A result, already encoded by the handler.
    Ok(Id, Box<RawValue>),
    Error(Response),
}

impl Answer {
    fn from_result(id: Id, r: Result<Box<RawValue>, RpcError>) -> Answer {
        match r {
            Ok(raw) => Answer::Ok(id, raw),
            Err(e) => Answer::Error(Response {
                jsonrpc: "2.0".into(),
                id,
                result: None,
                error: Some(e),
            }),
        }
    }

    fn encode(&self, out: &mut Vec<u8>) {
        #[derive(Serialize)]
        struct OkLine<'a> {
            jsonrpc: &'static str,
            id: &'a Id,
            result: &'a RawValue,
        }
        let r = match self {
            Answer::Ok(id, raw) => serde_json::to_writer(
                &mut *out,
                &OkLine {
                    jsonrpc: "2.0",
                    id,
                    result: raw,
                },
            ),
            Answer::Error(resp) => serde_json::to_writer(&mut *out, resp),
        };
        r.expect("an answer always encodes");
        out.push(b'\n');
    }
}

/// Encodes and queues one answer. `Err` when the writer is gone (the
/// client vanished).
async fn send(out: &Outbox, a: Answer) -> Result<(), ()> {
    let mut line = Vec::new();
    a.encode(&mut line);
    out.send_line(line).await
}

/// Answers a refused peer (unauthorized uid, too many connections) once
/// (id null) and closes. Reads what it already sent first, so that the
/// kernel does not turn our close into a connection reset that would hide
/// the answer.
async fn refuse(mut stream: UnixStream, code: ErrorCode, message: String) {
    let resp = Response::err(Id::Null, code, message);
    let mut line = serde_json::to_vec(&resp).expect("serializes");
    line.push(b'\n');
    let _ = stream.write_all(&line).await;
    let _ = stream.shutdown().await;
    let drain = async {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stream.read(&mut buf).await {
            if n == 0 {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), drain).await;
}
