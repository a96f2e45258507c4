//! One open document: an actor task owning the editor's text and the
//! leased worker (its forwarder task, carrying Lean's messages to the
//! editor: `forward.rs`).
//!
//! Versions: the leased worker's document already went through versions
//! 1..=w (header, warm-up, the pool's requests), so the editor's version
//! `e` is sent as `e + offset`, with `offset` fixed per worker so that the
//! editor's text arrives as version `w + 1`. Messages of older versions
//! (the pool's texts) are dropped on the way back.

mod forward;

use crate::conn::{Conn, Sink, Started};
use crate::convert::apply_changes;
use crate::remote::RemoteLease;
use crate::{failed, not_open, Shared, Source};
use forward::{forward, send_notification};
use leanpool_lean::leased::Gate;
use leanpool_lean::{proc, Worker};
use leanpool_screen::{guard, header_key};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::{mpsc, oneshot};
use tower_lsp::jsonrpc::Result;

/// After this many worker deaths without an edit in between, the document
/// is not re-opened again until the next edit (a text that kills Lean
/// would otherwise take a worker start after each death, forever).
const MAX_REOPENS_WITHOUT_EDIT: u32 = 2;

pub(crate) enum DocMsg {
    Change {
        version: i32,
        changes: Value,
    },
    /// A notification about the document, forwarded as is (URI mapped).
    Notify {
        method: &'static str,
        params: Value,
    },
    /// A request about the document: taken by the actor in the editor's
    /// order with the edits, so that the gate sees them in that order (a
    /// request right behind an edit is checked against the edited text).
    Request {
        method: String,
        params: Value,
        /// The request as sent to Lean (to await its answer), or why not.
        reply: oneshot::Sender<Result<Started>>,
    },
    Close,
    /// The forwarder of worker generation `gen` saw it end; `reopen`:
    /// whether the document goes on at once on a fresh worker (a crash),
    /// or only at its next edit (a limit of the lease ended it).
    Died {
        gen: u64,
        reason: String,
        reopen: bool,
    },
}

/// What requests about the document find.
enum ConnState {
    Ready(Arc<Conn>),
    /// The guard refused the current text; Lean has not seen it.
    Refused(String),
    /// No worker (lease failed, or it died too often).
    Failed(String),
}

pub(crate) struct DocHandle {
    pub tx: mpsc::UnboundedSender<DocMsg>,
    uri: String,
}

impl DocHandle {
    /// Forwards a request through the document's actor (behind the edits
    /// the editor sent before it; while a worker is leased, it waits) and
    /// waits for Lean's answer. The message is queued before this future
    /// first yields: tower-lsp starts handlers in the order the editor
    /// sent the messages, and so the actor takes them in that order.
    pub(crate) async fn request(&self, method: &str, params: Value) -> Result<Value> {
        let (reply, started) = oneshot::channel();
        let method = method.to_string();
        self.tx
            .send(DocMsg::Request {
                method,
                params,
                reply,
            })
            .map_err(|_| not_open(&self.uri))?;
        let started = started.await.map_err(|_| not_open(&self.uri))??;
        started.answer().await
    }
}

/// Why no worker could be leased for a document.
#[derive(Debug, thiserror::Error)]
enum NoWorker {
    #[error(transparent)]
    Pool(leanpool_pool::PoolError),
    #[error(transparent)]
    Daemon(crate::remote::LeaseError),
}

/// A document's worker: in this process, or leased from a daemon.
#[expect(
    clippy::large_enum_variant,
    reason = "one per open document, never moved in a loop"
)]
enum Link {
    Local(Worker),
    Remote(RemoteLease),
}

impl Link {
    /// The imports the worker holds.
    fn header_key(&self) -> String {
        match self {
            Link::Local(w) => header_key(w.header()),
            Link::Remote(r) => r.header.clone(),
        }
    }

    async fn close(self) {
        match self {
            Link::Local(w) => w.kill().await,
            // The daemon kills the worker when the connection ends.
            Link::Remote(mut r) => r.close(),
        }
    }
}

/// Opens a document: starts its actor, which leases a worker.
pub(crate) fn start(
    shared: Arc<Shared>,
    uri: String,
    text: String,
    version: i32,
) -> Arc<DocHandle> {
    let (tx, rx) = mpsc::unbounded_channel();
    let actor = Actor {
        shared,
        uri: uri.clone(),
        text,
        version,
        worker: None,
        conn: None,
        gen: 0,
        // Replaced by the first `refresh`, before any request is taken.
        state: ConnState::Failed("the file is being opened".into()),
        tx: tx.clone(),
        notes: Arc::new(Mutex::new(Vec::new())),
        in_sync: false,
        deaths_since_edit: 0,
    };
    tokio::spawn(actor.run(rx));
    Arc::new(DocHandle { tx, uri })
}

struct Actor {
    shared: Arc<Shared>,
    uri: String,
    text: String,
    version: i32,
    worker: Option<Link>,
    conn: Option<Arc<Conn>>,
    gen: u64,
    /// What a request finds now.
    state: ConnState,
    tx: mpsc::UnboundedSender<DocMsg>,
    /// Diagnostics of leanpool's own appended to Lean's (worker replaced).
    notes: Arc<Mutex<Vec<Value>>>,
    /// The worker's document equals `text`.
    in_sync: bool,
    deaths_since_edit: u32,
}

impl Actor {
    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<DocMsg>) {
        self.refresh().await;
        while let Some(msg) = rx.recv().await {
            match msg {
                DocMsg::Close => break,
                DocMsg::Notify { method, params } => {
                    if let Some(c) = &self.conn {
                        if self.in_sync {
                            c.notify(method, params);
                        }
                    }
                }
                DocMsg::Change { version, changes } => self.change(version, changes).await,
                DocMsg::Request {
                    method,
                    params,
                    reply,
                } => self.request(&method, params, reply),
                DocMsg::Died {
                    gen,
                    reason,
                    reopen,
                } => {
                    if gen == self.gen && self.conn.is_some() {
                        self.died(reason, reopen).await;
                    }
                }
            }
        }
        self.drop_worker().await;
    }

    /// Sends a request to the worker through its gate, now: the edits
    /// before it in the editor's order are Lean's (or refused) already.
    fn request(&self, method: &str, params: Value, reply: oneshot::Sender<Result<Started>>) {
        if reply.is_closed() {
            // The editor cancelled it while it waited for a worker.
            return;
        }
        let started = match &self.state {
            ConnState::Ready(c) => c.start(method, params),
            ConnState::Refused(why) => Err(failed(format!(
                "leanpool refused this file, Lean has not seen its current text: {why}"
            ))),
            ConnState::Failed(why) => Err(failed(why.clone())),
        };
        // Not delivered (the editor cancelled meanwhile): dropping the
        // request cancels it in Lean.
        let _ = reply.send(started);
    }

    async fn change(&mut self, version: i32, changes: Value) {
        self.version = version;
        self.deaths_since_edit = 0;
        self.notes.lock().unwrap().clear();
        if let Err(e) = apply_changes(&mut self.text, &changes) {
            // The editor's text is no longer known: fail closed.
            self.in_sync = false;
            let why = format!("leanpool could not apply an edit ({e}); close and re-open the file");
            self.publish_own(vec![note(1, &why, None)]).await;
            self.state = ConnState::Failed(why);
            return;
        }
        let screened = self.screen().await;
        match (self.conn.clone(), screened) {
            (Some(c), Ok(screened)) if self.in_sync => {
                // The worker gets the screened text whole, never the
                // editor's edits: what Lean reads is what was screened.
                // Its gate refuses other imports than the lease's.
                if let Err(r) = c.send_text(version as i64 + c.offset, &screened) {
                    self.refuse_imports(r).await;
                }
            }
            _ => self.refresh().await,
        }
    }

    /// Screens the current text: `[guard]`, and on a local pool the
    /// command keywords of its workers' libraries (`Screening::library`;
    /// through a daemon, its lease tunnel screens with its pool's).
    /// The first screen waits for the pool's reading of the libraries
    /// (seconds for a large `LEAN_PATH`) on a blocking thread, never on
    /// this async one.
    async fn screen(&self) -> std::result::Result<guard::Screened, guard::Rejection> {
        let none = Default::default();
        let library = match &self.shared.source {
            Source::Pool(pool) => &pool.policy().library,
            _ => &none,
        };
        if !library.loaded() {
            let reading = library.clone();
            // A reading that panicked is tried again by the screen below.
            let _ = tokio::task::spawn_blocking(move || reading.load()).await;
        }
        let screening = guard::Screening {
            library,
            ..guard::Screening::from(&self.shared.cfg.guard)
        };
        guard::screen(&self.text, screening)
    }

    /// Brings the worker's document to the current text: screens it,
    /// leases a worker if there is none, sends the whole text.
    async fn refresh(&mut self) {
        let screened = match self.screen().await {
            Ok(s) => s,
            Err(rej) => {
                self.refuse(rej).await;
                return;
            }
        };
        if self.worker.is_none() {
            let leased = match &self.shared.source {
                Source::Pool(pool) => pool
                    .lease(&self.text)
                    .await
                    .map(|l| (Link::Local(l.worker), l.rss_cap))
                    .map_err(NoWorker::Pool),
                Source::Daemon { socket, project } => {
                    crate::remote::lease(socket, project.as_deref(), &self.text)
                        .await
                        .map(|l| (Link::Remote(l), None))
                        .map_err(NoWorker::Daemon)
                }
            };
            match leased {
                Ok((link, rss_cap)) => self.attach(link, rss_cap),
                Err(e) => {
                    let why = format!("leanpool could not get a Lean worker for this file: {e}");
                    self.publish_own(vec![note(1, &why, None)]).await;
                    self.state = ConnState::Failed(why);
                    return;
                }
            }
        }
        let c = self.conn.clone().expect("attached");
        if let Err(r) = c.send_text(self.version as i64 + c.offset, &screened) {
            self.refuse_imports(r).await;
            return;
        }
        self.in_sync = true;
        // Clears a refusal shown before, or shows a note at once; Lean's
        // own diagnostics for this version replace it (notes appended).
        let notes = self.notes.lock().unwrap().clone();
        self.publish_own(notes).await;
        self.state = ConnState::Ready(c);
    }

    /// Shows why the current text is not sent to Lean.
    async fn refuse(&mut self, rej: guard::Rejection) {
        self.in_sync = false;
        let msg = format!("leanpool refused this file; Lean has not seen it: {rej}");
        let line = rej.line;
        let ch = rej.character;
        let width = if rej.construct.contains('\n') {
            1
        } else {
            leanpool_screen::text::utf16_len(&rej.construct).max(1)
        };
        let range = json!({ "start": { "line": line, "character": ch }, "end": { "line": line, "character": ch + width } });
        self.publish_own(vec![note(1, &msg, Some(range))]).await;
        self.state = ConnState::Refused(rej.to_string());
    }

    /// Shows why the current text is not sent to Lean: its imports are
    /// not the ones the worker was leased for (the gate's refusal). As
    /// Lean's own server does when imports change, the file must be
    /// restarted (closed and re-opened) to be checked with the new ones.
    async fn refuse_imports(&mut self, r: leanpool_lean::leased::Refusal) {
        self.in_sync = false;
        let range =
            json!({ "start": { "line": 0, "character": 0 }, "end": { "line": 1, "character": 0 } });
        let msg = format!("leanpool did not send this text to Lean: {}", r.message);
        self.publish_own(vec![note(1, &msg, Some(range))]).await;
        self.state = ConnState::Refused(r.message);
    }

    fn attach(&mut self, mut link: Link, rss_cap: Option<u64>) {
        self.gen += 1;
        let (rx, raw, pid, worker_uri, worker_version) = match &mut link {
            Link::Local(w) => (
                w.passthrough(),
                Sink::Local(w.raw_sender()),
                w.pid(),
                w.uri().to_string(),
                w.version() as i64,
            ),
            Link::Remote(r) => {
                let rx = r.rx.take().expect("a fresh lease");
                (
                    rx,
                    Sink::Remote(r.tx.clone()),
                    r.pid,
                    r.uri.clone(),
                    r.version,
                )
            }
        };
        let offset = worker_version + 1 - self.version as i64;
        let limits = self.shared.cfg.limits.clone();
        // A worker in this process is watched here; a daemon's lease is
        // watched by the daemon (its memory cap, its CPU budget).
        let watch = matches!(link, Link::Local(_))
            .then(|| proc::LeaseWatch::start(pid, rss_cap, limits.cpu));
        let gate = Gate::new(
            &worker_uri,
            &link.header_key(),
            worker_version,
            limits,
            Instant::now(),
        );
        let conn = Arc::new(Conn {
            gen: self.gen,
            raw,
            pid,
            worker_uri,
            editor_uri: self.uri.clone(),
            offset,
            gate: Mutex::new(gate),
        });
        let remote = matches!(link, Link::Remote(_));
        tracing::info!(uri = %self.uri, pid, remote, "document on a leased worker");
        tokio::spawn(forward(
            conn.clone(),
            rx,
            self.shared.clone(),
            self.tx.clone(),
            self.notes.clone(),
            watch,
        ));
        self.conn = Some(conn);
        self.worker = Some(link);
        self.in_sync = false;
    }

    async fn drop_worker(&mut self) {
        self.conn = None;
        self.in_sync = false;
        if let Some(w) = self.worker.take() {
            // Recycled: the editor's text is in it, so it never goes back.
            w.close().await;
        }
    }

    async fn died(&mut self, reason: String, reopen: bool) {
        tracing::warn!(uri = %self.uri, "worker of an open document stopped: {reason}");
        self.drop_worker().await;
        self.deaths_since_edit += 1;
        if !reopen {
            let why = format!("the Lean worker serving this file was ended: {reason}; leanpool re-opens the file at its next edit");
            self.publish_own(vec![note(1, &why, None)]).await;
            self.state = ConnState::Failed(why);
            return;
        }
        if self.deaths_since_edit > MAX_REOPENS_WITHOUT_EDIT {
            let why = format!(
                "the Lean worker serving this file stopped {} times in a row ({reason}); leanpool re-opens it at the next edit",
                self.deaths_since_edit
            );
            self.publish_own(vec![note(1, &why, None)]).await;
            self.state = ConnState::Failed(why);
            return;
        }
        let why = format!("the Lean worker serving this file stopped ({reason}); the file was re-opened on a fresh worker");
        *self.notes.lock().unwrap() = vec![note(2, &why, None)];
        self.refresh().await;
    }

    /// Publishes leanpool's own diagnostics for the current version.
    async fn publish_own(&self, diags: Vec<Value>) {
        let p = json!({ "uri": self.uri, "version": self.version, "diagnostics": diags });
        send_notification(&self.shared, "textDocument/publishDiagnostics", p).await;
    }
}

fn note(severity: u8, message: &str, range: Option<Value>) -> Value {
    let range = range.unwrap_or_else(
        || json!({ "start": { "line": 0, "character": 0 }, "end": { "line": 0, "character": 0 } }),
    );
    json!({ "range": range, "severity": severity, "source": "leanpool", "message": message })
}
