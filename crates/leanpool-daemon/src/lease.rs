//! `lease`: a warm worker taken out of the daemon's pool for the lifetime
//! of one connection, which becomes a tunnel to the worker's LSP (one JSON
//! message per line each way; docs/protocol.md, "lease").
//!
//! Any socket client can lease, so the tunnel is guarded like `check`:
//!
//! * client -> Lean: only the messages an editor needs pass (a fixed list
//!   of requests about the leased document, full-text `didChange`,
//!   cancellation, RPC release/keep-alive); every text is screened by the
//!   input guard before Lean sees it (a refused one is answered with a
//!   `publishDiagnostics` of leanpool's own and never sent); request ids are
//!   the daemon's own on the Lean side (the client's are restored on the
//!   way back), pending requests are capped.
//! * Lean -> client: answers only to requests the daemon sent, diagnostics
//!   and progress only for the leased document and for versions the daemon
//!   sent; any other frame means code in the worker forged output: the
//!   worker is killed (counted `compromised`) and the tunnel ends.
//! * The worker's memory cap is polled as the pool polls it; the worker is
//!   killed when the connection ends (never returned to the pool: it ran
//!   the caller's documents, whose effects on the process we cannot undo).

use leanpool_lean::{guard, proc, RawSender, Worker};
use leanpool_pool::GuardPolicy;
use leanpool_protocol::ErrorCode;
use leanpool_rpc::tunnel::{Tunnel, TunnelIo, TunnelLine, TunnelOut};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub use leanpool_protocol::{LeaseParams, LeaseResult, LeaseStatus};

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

/// Requests a client may send through the tunnel (about the leased
/// document only). Anything else is answered `METHOD_NOT_FOUND`.
pub const TUNNEL_REQUESTS: &[&str] = &[
    "textDocument/hover",
    "textDocument/definition",
    "textDocument/declaration",
    "textDocument/typeDefinition",
    "textDocument/completion",
    "completionItem/resolve",
    "textDocument/documentSymbol",
    "textDocument/documentHighlight",
    "textDocument/foldingRange",
    "textDocument/semanticTokens/full",
    "textDocument/semanticTokens/range",
    "textDocument/codeAction",
    "codeAction/resolve",
    "textDocument/inlayHint",
    "textDocument/waitForDiagnostics",
    "$/lean/plainGoal",
    "$/lean/plainTermGoal",
    "$/lean/rpc/connect",
    "$/lean/rpc/call",
];

/// Requests whose params do not name the document (Lean put it into
/// their `data`).
const UNADDRESSED_REQUESTS: &[&str] = &["completionItem/resolve", "codeAction/resolve"];

/// Requests the client may have pending in Lean at once.
pub const MAX_PENDING: usize = 256;
/// Lean's own requests (refreshes) waiting for the client's answer.
const MAX_SERVER_REQUESTS: usize = 64;
/// Ids of the daemon's requests to Lean: far above the worker's own.
const FIRST_ID: i64 = 1 << 40;
const RSS_POLL: Duration = Duration::from_millis(500);

/// A leased worker and what its tunnel needs.
pub struct LeaseTunnel {
    /// The leased worker (killed when the tunnel ends).
    pub worker: Worker,
    /// The memory cap the pool computed for it.
    pub rss_cap: Option<u64>,
    /// The guard every text sent to it passes.
    pub guard: GuardPolicy,
    /// The daemon's lease count (`status`).
    pub leases: Arc<Leases>,
    /// This lease's place under `max_leases`, freed on drop.
    pub slot: LeaseSlot,
    /// For logs.
    pub conn: u64,
}

impl LeaseTunnel {
    /// `lease`' answer for the leased `header`.
    pub fn result(&self, header: String) -> LeaseResult {
        LeaseResult {
            uri: self.worker.uri().to_string(),
            version: self.worker.version() as i64,
            pid: self.worker.pid(),
            header,
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

struct Session {
    raw: RawSender,
    uri: String,
    /// Versions the daemon sent Lean (the only ones Lean may report on).
    sent: HashSet<i64>,
    /// The newest version the client used (sent or refused).
    last_version: i64,
    /// The version the worker had when leased: older reports are the
    /// pool's and dropped.
    leased_version: i64,
    /// Why the client's current text was refused, if it was.
    refused: Option<String>,
    /// Daemon id -> client id of requests pending in Lean.
    pending: HashMap<i64, Value>,
    next_id: i64,
    /// Lean's requests forwarded to the client and not yet answered.
    server_requests: HashSet<String>,
    guard: GuardPolicy,
    leases: Arc<Leases>,
}

impl LeaseTunnel {
    async fn serve(self, mut io: TunnelIo) {
        let LeaseTunnel {
            mut worker,
            rss_cap,
            guard,
            leases,
            slot,
            conn,
        } = self;
        let mut rx = worker.passthrough();
        let mut s = Session {
            raw: worker.raw_sender(),
            uri: worker.uri().to_string(),
            sent: HashSet::new(),
            last_version: worker.version() as i64,
            leased_version: worker.version() as i64,
            refused: None,
            pending: HashMap::new(),
            next_id: FIRST_ID,
            server_requests: HashSet::new(),
            guard,
            leases: leases.clone(),
        };
        leases.granted.fetch_add(1, Ordering::SeqCst);
        let pid = worker.pid();
        tracing::info!(conn, pid, uri = %s.uri, "worker leased to a connection");
        let mut tick = tokio::time::interval(RSS_POLL);
        let end = loop {
            let backlog = io.out.backlogged();
            tokio::select! {
                line = io.incoming.recv() => match line {
                    None => break End::ClientClosed,
                    Some(l) => {
                        if let Err(()) = s.on_client_line(l, &io.out).await {
                            break End::ClientClosed;
                        }
                    }
                },
                m = rx.recv(), if !backlog => match m {
                    None => break End::Reason(match worker.compromised() {
                        Some(what) => format!("the worker was killed: it wrote a frame nobody asked for ({what})"),
                        None => "the worker stopped".into(),
                    }),
                    Some(m) => match s.on_lean_message(m, &io.out).await {
                        Ok(()) => {}
                        Err(Stop::ClientGone) => break End::ClientClosed,
                        Err(Stop::Forged(what)) => {
                            leases.compromised.fetch_add(1, Ordering::SeqCst);
                            tracing::warn!(conn, pid, "leased worker compromised: {what}");
                            break End::Reason(format!("the worker was killed: it wrote a frame nobody asked for ({what})"));
                        }
                    },
                },
                _ = io.out.drained(), if backlog => {}
                _ = tick.tick(), if rss_cap.is_some() => {
                    let cap = rss_cap.unwrap_or(u64::MAX);
                    if let Some(rss) = proc::group_rss_bytes(pid).filter(|&r| r > cap) {
                        break End::Reason(format!("the worker exceeded the memory limit, {rss} > {cap} bytes resident, and was killed"));
                    }
                }
            }
        };
        // Never back into the pool: it ran the caller's documents.
        worker.kill().await;
        if let End::Reason(why) = &end {
            tracing::info!(conn, pid, "lease ended: {why}");
            let msg = json!({ "jsonrpc": "2.0", "method": "$/leanpool/leaseEnded", "params": { "reason": why } });
            let _ = io.out.send(line(&msg)).await;
        } else {
            tracing::info!(conn, pid, "lease ended: the client closed the connection");
        }
        drop(slot);
    }
}

enum Stop {
    /// A frame nobody asked for: what it was.
    Forged(String),
    ClientGone,
}

fn line(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).expect("serializable")
}

fn error(id: Value, code: impl Into<i64>, message: impl Into<String>) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code.into(), "message": message.into() } })
}

/// LSP's `RequestFailed`.
const REQUEST_FAILED: i64 = -32803;

/// The document a request or notification names: `textDocument.uri`, else
/// a top-level `uri`.
fn named_uri(params: &Value) -> Option<&str> {
    params
        .get("textDocument")
        .and_then(|t| t.get("uri"))
        .or_else(|| params.get("uri"))
        .and_then(Value::as_str)
}

impl Session {
    /// `Err` when the client is gone.
    async fn on_client_line(&mut self, l: TunnelLine, out: &TunnelOut) -> Result<(), ()> {
        let bytes = match l {
            TunnelLine::TooLarge { len } => {
                let msg = format!("message is {len} bytes; this daemon accepts at most max_request_bytes per line");
                return out
                    .send(line(&error(Value::Null, ErrorCode::RequestTooLarge, msg)))
                    .await;
            }
            TunnelLine::Line(b) => b,
        };
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(());
        }
        let msg: Value = match serde_json::from_slice(&bytes) {
            Ok(Value::Object(o)) => Value::Object(o),
            Ok(_) => {
                return out
                    .send(line(&error(
                        Value::Null,
                        ErrorCode::InvalidRequest,
                        "a message must be a JSON object",
                    )))
                    .await
            }
            Err(e) => {
                return out
                    .send(line(&error(
                        Value::Null,
                        ErrorCode::ParseError,
                        format!("not valid JSON: {e}"),
                    )))
                    .await
            }
        };
        let method = msg
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_string);
        let id = msg.get("id").cloned();
        match (method, id) {
            (Some(m), Some(id)) => self.client_request(m, id, msg, out).await,
            (Some(m), None) => self.client_notification(m, msg, out).await,
            (None, Some(id)) => {
                // An answer to one of Lean's requests; unasked ones dropped.
                let key = id.to_string();
                if self.server_requests.remove(&key) {
                    self.raw.send(&msg);
                }
                Ok(())
            }
            (None, None) => {
                out.send(line(&error(
                    Value::Null,
                    ErrorCode::InvalidRequest,
                    "a message needs a `method` or an `id`",
                )))
                .await
            }
        }
    }

    async fn client_request(
        &mut self,
        method: String,
        id: Value,
        mut msg: Value,
        out: &TunnelOut,
    ) -> Result<(), ()> {
        if !(id.is_string() || id.is_i64()) {
            return out
                .send(line(&error(
                    Value::Null,
                    ErrorCode::InvalidRequest,
                    "`id` must be a string or an integer",
                )))
                .await;
        }
        if !TUNNEL_REQUESTS.contains(&method.as_str()) {
            let why = format!(
                "`{method}` is not served through a lease (docs/protocol.md lists what is)"
            );
            return out
                .send(line(&error(id, ErrorCode::MethodNotFound, why)))
                .await;
        }
        let params = msg.get("params").cloned().unwrap_or(Value::Null);
        if !UNADDRESSED_REQUESTS.contains(&method.as_str())
            && named_uri(&params) != Some(self.uri.as_str())
        {
            let why = format!(
                "requests through a lease must be about its document `{}`",
                self.uri
            );
            return out
                .send(line(&error(id, ErrorCode::InvalidParams, why)))
                .await;
        }
        if let Some(why) = &self.refused {
            let why = format!(
                "leanpool refused the document's current text, Lean has not seen it: {why}"
            );
            return out.send(line(&error(id, REQUEST_FAILED, why))).await;
        }
        if self.pending.len() >= MAX_PENDING {
            let why = format!("at most {MAX_PENDING} requests may be pending through a lease");
            return out.send(line(&error(id, ErrorCode::Overloaded, why))).await;
        }
        let ours = self.next_id;
        self.next_id += 1;
        msg["id"] = Value::from(ours);
        if self.raw.send(&msg) {
            self.pending.insert(ours, id);
        } else {
            return out
                .send(line(&error(id, REQUEST_FAILED, "the worker stopped")))
                .await;
        }
        Ok(())
    }

    async fn client_notification(
        &mut self,
        method: String,
        msg: Value,
        out: &TunnelOut,
    ) -> Result<(), ()> {
        let params = msg.get("params").cloned().unwrap_or(Value::Null);
        let ours = named_uri(&params) == Some(self.uri.as_str());
        match method.as_str() {
            "textDocument/didChange" if ours => return self.did_change(&params, out).await,
            "textDocument/didSave" if ours => {
                // Lean needs no text for it; none is passed.
                if self.refused.is_none() {
                    self.raw.send(&json!({ "jsonrpc": "2.0", "method": method, "params": { "textDocument": { "uri": self.uri } } }));
                }
            }
            "$/lean/rpc/release" | "$/lean/rpc/keepAlive" if ours => {
                self.raw.send(&msg);
            }
            "$/cancelRequest" => {
                let theirs = params.get("id").cloned().unwrap_or(Value::Null);
                if let Some((&mine, _)) = self.pending.iter().find(|(_, v)| **v == theirs) {
                    self.raw.send(&json!({ "jsonrpc": "2.0", "method": "$/cancelRequest", "params": { "id": mine } }));
                }
            }
            _ => {
                let why = if ours || named_uri(&params).is_none() {
                    format!("`{method}` is not passed through a lease")
                } else {
                    format!(
                        "notifications through a lease must be about its document `{}`",
                        self.uri
                    )
                };
                return refused(out, &method, &why).await;
            }
        }
        Ok(())
    }

    /// A full-text edit: the version must grow, the text pass the guard.
    async fn did_change(&mut self, params: &Value, out: &TunnelOut) -> Result<(), ()> {
        let m = "textDocument/didChange";
        let Some(version) = params["textDocument"]["version"].as_i64() else {
            return refused(out, m, "`textDocument.version` must be an integer").await;
        };
        if version <= self.last_version {
            let why = format!("version {version} is not newer than {}", self.last_version);
            return refused(out, m, &why).await;
        }
        let text =
            match params["contentChanges"].as_array().map(Vec::as_slice) {
                Some([c])
                    if c.get("range").is_none_or(Value::is_null)
                        && c.as_object()
                            .is_some_and(|o| o.keys().all(|k| k == "text" || k == "range")) =>
                {
                    match c.get("text").and_then(Value::as_str) {
                        Some(t) => t.to_string(),
                        None => return refused(out, m, "the change has no `text`").await,
                    }
                }
                _ => return refused(
                    out,
                    m,
                    "a lease takes whole texts only: exactly one content change, without a range",
                )
                .await,
            };
        self.last_version = version;
        let policy = self.guard.clone();
        let screened = tokio::task::spawn_blocking(move || guard::screen(&text, &policy)).await;
        let r = match screened {
            Ok(x) => x,
            Err(e) => return refused(out, m, &format!("screening failed: {e}")).await,
        };
        match r {
            Ok(screened) => {
                self.refused = None;
                // The frame carries the screened text, nothing else.
                let msg = json!({ "jsonrpc": "2.0", "method": m, "params": {
                    "textDocument": { "uri": self.uri, "version": version },
                    "contentChanges": [{ "text": screened.caller_text() }],
                }});
                if self.raw.send(&msg) {
                    self.sent.insert(version);
                }
                Ok(())
            }
            Err(rej) => {
                self.leases.refused.fetch_add(1, Ordering::SeqCst);
                let msg = format!("leanpool refused this file; Lean has not seen it: {rej}");
                let width = if rej.construct.contains('\n') {
                    1
                } else {
                    leanpool_lean::text::utf16_len(&rej.construct).max(1)
                };
                let range = json!({ "start": { "line": rej.line, "character": rej.character },
                                    "end": { "line": rej.line, "character": rej.character + width } });
                self.refused = Some(rej.to_string());
                let diag =
                    json!({ "range": range, "severity": 1, "source": "leanpool", "message": msg });
                let p = json!({ "uri": self.uri, "version": version, "diagnostics": [diag] });
                out.send(line(&json!({ "jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": p }))).await
            }
        }
    }

    /// Routes one message from Lean; `Err` names a frame nobody asked for.
    async fn on_lean_message(&mut self, mut msg: Value, out: &TunnelOut) -> Result<(), Stop> {
        let gone = |_| Stop::ClientGone;
        let Value::Object(obj) = &msg else {
            return Err(Stop::Forged("a message that is not a JSON object".into()));
        };
        let method = match obj.get("method") {
            None => None,
            Some(Value::String(m)) => Some(m.clone()),
            Some(_) => {
                return Err(Stop::Forged(
                    "a message whose `method` is not a string".into(),
                ))
            }
        };
        match (method, obj.get("id").cloned()) {
            (None, Some(id)) => {
                let Some(theirs) = id.as_i64().and_then(|i| self.pending.remove(&i)) else {
                    return Err(Stop::Forged(format!(
                        "an answer to request {id}, which the daemon never sent"
                    )));
                };
                msg["id"] = theirs;
                out.send(line(&msg)).await.map_err(gone)
            }
            (Some(m), Some(id)) => {
                // Lean's own requests: refreshes go to the client, the rest
                // are answered here as the driver answers them.
                let refresh = m.starts_with("workspace/") && m.ends_with("/refresh");
                if refresh && self.server_requests.len() < MAX_SERVER_REQUESTS {
                    self.server_requests.insert(id.to_string());
                    out.send(line(&msg)).await.map_err(gone)
                } else {
                    self.raw
                        .send(&json!({ "jsonrpc": "2.0", "id": id, "result": null }));
                    Ok(())
                }
            }
            (Some(m), None) => {
                let p = msg.get("params").cloned().unwrap_or(Value::Null);
                let version = match m.as_str() {
                    "textDocument/publishDiagnostics" => p.get("version"),
                    "$/lean/fileProgress" => p.get("textDocument").and_then(|t| t.get("version")),
                    _ if leanpool_lean::IGNORED_NOTIFICATIONS.contains(&m.as_str()) => {
                        return Ok(())
                    }
                    _ => {
                        return Err(Stop::Forged(format!(
                            "a `{m}` notification, which a file worker does not send"
                        )))
                    }
                };
                if named_uri(&p) != Some(self.uri.as_str()) {
                    return Err(Stop::Forged(format!("a `{m}` about another document")));
                }
                let Some(v) = version.and_then(Value::as_i64) else {
                    return Err(Stop::Forged(format!("a `{m}` without a version")));
                };
                if v <= self.leased_version {
                    // The pool's last request, reported late.
                    return Ok(());
                }
                if !self.sent.contains(&v) {
                    return Err(Stop::Forged(format!(
                        "a `{m}` for version {v}, which the daemon never sent"
                    )));
                }
                out.send(line(&msg)).await.map_err(gone)
            }
            (None, None) => Err(Stop::Forged(
                "a message with neither `method` nor `id`".into(),
            )),
        }
    }
}

/// Tells the client a notification was not passed to Lean.
async fn refused(out: &TunnelOut, method: &str, why: &str) -> Result<(), ()> {
    let msg = json!({ "jsonrpc": "2.0", "method": "$/leanpool/refused", "params": { "method": method, "message": why } });
    out.send(line(&msg)).await
}
