//! `lease`: a warm worker taken out of the daemon's pool for the lifetime
//! of one connection, which becomes a tunnel to the worker's LSP (one JSON
//! message per line each way; docs/protocol.md, "lease").
//!
//! Any socket client can lease, so the tunnel is guarded like `check`.
//! The rules are the leased-worker filter every LSP path shares,
//! [`leanpool_lean::leased::Gate`] (allowlist of methods and params,
//! clean start, bounds, frames from Lean); this file moves the messages:
//!
//! * every text is screened by the input guard before Lean sees it (on a
//!   blocking thread; a refused one is answered with a `publishDiagnostics`
//!   of leanpool's own and never sent);
//! * a forged frame from Lean kills the worker (counted `compromised`) and
//!   ends the tunnel;
//! * the worker's memory cap and CPU budget are polled; requests past
//!   their time limit, a cancelled request Lean does not stop and an idle
//!   holder end as the gate says;
//! * the worker is killed when the connection ends (never returned to the
//!   pool: it ran the caller's documents).

use leanpool_lean::leased::{Edit, FromLean, Gate, LeaseLimits};
use leanpool_lean::{proc, RawSender, Worker};
use leanpool_pool::GuardPolicy;
use leanpool_protocol::lsp_error;
use leanpool_rpc::tunnel::{Tunnel, TunnelIo, TunnelLine, TunnelOut};
use leanpool_screen::guard;
use serde_json::{json, Value};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

pub use leanpool_protocol::{LeaseParams, LeaseResult, LeaseStatus};

/// Default `max_leases`: each lease holds a whole worker (GBs) outside the
/// pool's `max_workers`.
pub const DEFAULT_MAX_LEASES: usize = 2;

/// The daemon's lease book: the cap and the counters.
#[derive(Debug)]
pub struct Leases {
    max: usize,
    active: AtomicUsize,
    granted: AtomicU64,
    refused: AtomicU64,
    compromised: AtomicU64,
}

impl Leases {
    /// At most `max` leases at once.
    pub fn new(max: usize) -> Arc<Leases> {
        Arc::new(Leases {
            max,
            active: AtomicUsize::new(0),
            granted: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            compromised: AtomicU64::new(0),
        })
    }

    /// A place for one more lease, or `None` at the cap.
    pub fn reserve(self: &Arc<Self>) -> Option<LeaseSlot> {
        self.active
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < self.max).then_some(n + 1)
            })
            .ok()
            .map(|_| LeaseSlot(self.clone()))
    }

    /// `status`' lease counts.
    pub fn status(&self) -> LeaseStatus {
        LeaseStatus {
            active: self.active.load(Ordering::SeqCst),
            max: self.max,
            granted: self.granted.load(Ordering::SeqCst),
            refused_texts: self.refused.load(Ordering::SeqCst),
            compromised: self.compromised.load(Ordering::SeqCst),
        }
    }
}

/// One counted lease; frees its place when dropped.
#[derive(Debug)]
pub struct LeaseSlot(Arc<Leases>);

impl Drop for LeaseSlot {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A leased worker and what its tunnel needs.
pub struct LeaseTunnel {
    /// The pristine worker (`leanpool_pool::Pool::lease`).
    pub worker: Worker,
    /// The memory cap the pool computed for it.
    pub rss_cap: Option<u64>,
    /// Its place in the machine-wide worker total of a daemon with
    /// several projects (issue 25), given back when the tunnel ends
    /// (after `worker`, which is killed first).
    pub permit: Option<leanpool_pool::WorkerPermit>,
    /// What every text is screened with (`[guard]` as read).
    pub guard: GuardPolicy,
    /// Whether `native_decide` passes the guard on the pool's workers
    /// (`leanpool_screen::Screening::native_decide`, as the pool screens:
    /// `[verdict] trust_compiler` on native Lean).
    pub native_decide: bool,
    /// The command keywords of the pool's libraries
    /// (`leanpool_screen::Screening::library`, as the pool screens).
    pub library: Arc<leanpool_screen::vocab::LibraryCommands>,
    /// The imports the lease was granted for (the header key).
    pub imports: String,
    /// The lease's caps.
    pub limits: LeaseLimits,
    /// The daemon's book, for the counters.
    pub leases: Arc<Leases>,
    /// This lease's place in the book.
    pub slot: LeaseSlot,
    /// For logs.
    pub conn: u64,
}

impl LeaseTunnel {
    /// The answer to `lease`.
    pub fn result(&self) -> LeaseResult {
        LeaseResult {
            uri: self.worker.uri().to_string(),
            version: self.worker.version() as i64,
            pid: self.worker.pid(),
            header: self.imports.clone(),
        }
    }
}

impl Tunnel for LeaseTunnel {
    fn run(self: Box<Self>, io: TunnelIo) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(self.serve(io))
    }
}

/// Why a tunnel ended, told to the client as its last message
/// (`$/leanpool/leaseEnded`).
enum End {
    ClientClosed,
    Reason(String),
}

/// The tunnel's side of one lease: the gate and the ways out.
struct Session {
    gate: Gate,
    raw: RawSender,
    guard: GuardPolicy,
    native_decide: bool,
    library: Arc<leanpool_screen::vocab::LibraryCommands>,
    leases: Arc<Leases>,
}

fn line(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).expect("serializable")
}

fn error(id: Value, code: i64, message: impl Into<String>) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message.into() } })
}

impl LeaseTunnel {
    async fn serve(self, mut io: TunnelIo) {
        let LeaseTunnel {
            mut worker,
            rss_cap,
            permit,
            guard,
            native_decide,
            library,
            imports,
            limits,
            leases,
            slot,
            conn,
        } = self;
        let mut rx = worker.passthrough();
        let uri = worker.uri().to_string();
        let cpu = limits.cpu;
        let gate = Gate::new(
            &uri,
            &imports,
            worker.version() as i64,
            limits,
            Instant::now(),
        );
        let mut s = Session {
            gate,
            raw: worker.raw_sender(),
            guard,
            native_decide,
            library,
            leases: leases.clone(),
        };
        leases.granted.fetch_add(1, Ordering::SeqCst);
        let pid = worker.pid();
        tracing::info!(conn, pid, uri = %uri, "worker leased to a connection");
        let watch = proc::LeaseWatch::start(pid, rss_cap, cpu);
        let mut tick = tokio::time::interval(LeaseLimits::POLL);
        let end = loop {
            let backlog = io.out.backlogged();
            tokio::select! {
                l = io.incoming.recv() => match l {
                    None => break End::ClientClosed,
                    Some(l) => if s.on_client_line(l, &io.out).await.is_err() {
                        break End::ClientClosed;
                    },
                },
                m = rx.recv(), if !backlog => match m {
                    None => break End::Reason(match worker.compromised() {
                        Some(what) => format!("the worker was killed: it wrote a frame nobody asked for ({what})"),
                        None => "the worker stopped".into(),
                    }),
                    Some(m) => if let Some(end) = s.on_lean(m, &io.out, conn, pid).await {
                        break end;
                    },
                },
                _ = io.out.drained(), if backlog => {}
                _ = tick.tick() => {
                    if let Some(why) = s.on_tick(&watch, &io.out).await {
                        break why;
                    }
                }
            }
        };
        // Never back into the pool: it ran the caller's documents.
        worker.kill().await;
        // Its place in the machine-wide total is free once it is gone.
        drop(permit);
        s.ended(&end, &io.out, conn, pid).await;
        drop(slot);
    }
}

impl Session {
    /// One message from Lean, through the gate: to the holder, answered
    /// to Lean, or dropped; a frame nobody asked for ends the lease.
    async fn on_lean(&mut self, m: Value, out: &TunnelOut, conn: u64, pid: u32) -> Option<End> {
        match self.gate.from_lean(m) {
            Ok(FromLean::Holder(m) | FromLean::Answer((), m)) => {
                if out.send(line(&m)).await.is_err() {
                    return Some(End::ClientClosed);
                }
            }
            Ok(FromLean::Lean(m)) => {
                self.raw.send(&m);
            }
            Ok(FromLean::Drop) => {}
            Err(forged) => {
                self.leases.compromised.fetch_add(1, Ordering::SeqCst);
                tracing::warn!(conn, pid, "leased worker compromised: {}", forged.0);
                return Some(End::Reason(format!(
                    "the worker was killed: it wrote a frame nobody asked for ({})",
                    forged.0
                )));
            }
        }
        None
    }

    /// Tells a client still there why its lease ended: its waiting
    /// requests answered, then `$/leanpool/leaseEnded`.
    async fn ended(&mut self, end: &End, out: &TunnelOut, conn: u64, pid: u32) {
        match end {
            End::Reason(why) => {
                tracing::info!(conn, pid, "lease ended: {why}");
                for ((), a) in self.gate.close(why) {
                    let _ = out.send(line(&a)).await;
                }
                let msg = json!({ "jsonrpc": "2.0", "method": leanpool_protocol::LEASE_ENDED_NOTIFICATION, "params": { "reason": why } });
                let _ = out.send(line(&msg)).await;
            }
            End::ClientClosed => {
                tracing::info!(conn, pid, "lease ended: the client closed the connection")
            }
        }
    }

    /// The gate's time limits, the memory cap and the CPU budget.
    async fn on_tick(&mut self, watch: &proc::LeaseWatch, out: &TunnelOut) -> Option<End> {
        let due = self.gate.tick(Instant::now());
        for m in &due.to_lean {
            self.raw.send(m);
        }
        for ((), a) in &due.to_holder {
            if out.send(line(a)).await.is_err() {
                return Some(End::ClientClosed);
            }
        }
        if let Some(why) = due.end {
            return Some(End::Reason(why));
        }
        watch.exceeded().map(End::Reason)
    }

    /// `Err` when the client is gone.
    async fn on_client_line(&mut self, l: TunnelLine, out: &TunnelOut) -> Result<(), ()> {
        let msg = match client_message(l) {
            Ok(Some(msg)) => msg,
            Ok(None) => return Ok(()),
            Err(e) => return out.send(line(&e)).await,
        };
        let method = msg
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_string);
        let params = msg.get("params").cloned().unwrap_or(Value::Null);
        let now = Instant::now();
        match (method, msg.get("id").cloned()) {
            (Some(m), Some(id)) => self.on_request(&m, id, &params, now, out).await,
            (Some(m), None) if m == "textDocument/didChange" => {
                match self.gate.edit(&params, now) {
                    Ok(edit) => self.screen_and_send(edit, out).await,
                    Err(r) => refused(out, &m, &r.message).await,
                }
            }
            (Some(m), None) => match self.gate.notification(&m, &params, now) {
                Ok(Some(to_lean)) => {
                    self.raw.send(&to_lean);
                    Ok(())
                }
                Ok(None) => Ok(()),
                Err(r) => refused(out, &m, &r.message).await,
            },
            (None, Some(id)) => {
                // An answer to one of Lean's requests; unasked ones dropped.
                if self.gate.holder_answer(&id) {
                    self.raw.send(&msg);
                }
                Ok(())
            }
            (None, None) => {
                let e = error(
                    Value::Null,
                    lsp_error::INVALID_REQUEST,
                    "a message needs a `method` or an `id`",
                );
                out.send(line(&e)).await
            }
        }
    }

    /// A request of the holder's: through the gate to Lean, or answered
    /// with the gate's refusal.
    async fn on_request(
        &mut self,
        m: &str,
        id: Value,
        params: &Value,
        now: Instant,
        out: &TunnelOut,
    ) -> Result<(), ()> {
        if !(id.is_string() || id.is_i64()) {
            let e = error(
                Value::Null,
                lsp_error::INVALID_REQUEST,
                "`id` must be a string or an integer",
            );
            return out.send(line(&e)).await;
        }
        match self.gate.request(id.clone(), (), m, params, now) {
            Ok(to_lean) => {
                if !self.raw.send(&to_lean) {
                    self.gate.unsent(&to_lean);
                    return out
                        .send(line(&error(
                            id,
                            lsp_error::REQUEST_FAILED,
                            "the worker stopped",
                        )))
                        .await;
                }
                Ok(())
            }
            Err(r) => out.send(line(&r.answer(id))).await,
        }
    }

    /// Screens a whole text on a blocking thread; sends it or answers the
    /// refusal.
    async fn screen_and_send(&mut self, edit: Edit, out: &TunnelOut) -> Result<(), ()> {
        let policy = self.guard.clone();
        let native_decide = self.native_decide;
        let library = self.library.clone();
        let screened = tokio::task::spawn_blocking(move || {
            let screening = guard::Screening {
                policy: &policy,
                native_decide,
                library: &library,
            };
            let r = guard::screen(&edit.text, screening);
            (r, edit)
        })
        .await;
        let m = "textDocument/didChange";
        let (r, edit) = match screened {
            Ok(x) => x,
            Err(e) => return refused(out, m, &format!("screening failed: {e}")).await,
        };
        match r {
            Ok(screened) => {
                // The frame carries the screened text, nothing else.
                match self.gate.accepted(edit.version, &screened, Instant::now()) {
                    Ok(text) => {
                        self.raw.send_text(self.gate.uri(), edit.version, &text);
                        Ok(())
                    }
                    Err(r) => refused(out, m, &r.message).await,
                }
            }
            Err(rej) => {
                self.leases.refused.fetch_add(1, Ordering::SeqCst);
                out.send(line(&self.gate.rejected(&edit, &rej))).await
            }
        }
    }
}

/// The JSON object a client line holds (`None` for a blank line), or the
/// error to answer it with (id null: a line that cannot be read has none).
fn client_message(l: TunnelLine) -> Result<Option<Value>, Value> {
    let bytes = match l {
        TunnelLine::TooLarge { len } => {
            let msg = format!(
                "message is {len} bytes; this daemon accepts at most max_request_bytes per line"
            );
            return Err(error(Value::Null, lsp_error::REQUEST_TOO_LARGE, msg));
        }
        TunnelLine::Line(b) => b,
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    match serde_json::from_slice(&bytes) {
        Ok(v @ Value::Object(_)) => Ok(Some(v)),
        Ok(_) => Err(error(
            Value::Null,
            lsp_error::INVALID_REQUEST,
            "a message must be a JSON object",
        )),
        Err(e) => Err(error(
            Value::Null,
            lsp_error::PARSE_ERROR,
            format!("not valid JSON: {e}"),
        )),
    }
}

/// Tells the client a notification was not passed to Lean.
async fn refused(out: &TunnelOut, method: &str, why: &str) -> Result<(), ()> {
    let msg = json!({ "jsonrpc": "2.0", "method": leanpool_protocol::LEASE_REFUSED_NOTIFICATION, "params": { "method": method, "message": why } });
    out.send(line(&msg)).await
}
