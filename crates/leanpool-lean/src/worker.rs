//! One Lean file-worker process with one warm document.
//!
//! Three tasks per process: a writer (stdin), a reader (stdout: routes
//! responses by id to the waiting request, answers the server's own
//! requests, records `$/lean/fileProgress` and `publishDiagnostics`), and
//! a stderr drain into a bounded [`RingLog`]. The [`Worker`] itself is
//! driven by one caller at a time (`&mut self`): a warm Lean document is
//! a single mutable thing, so concurrency belongs to the pool, not here.

use crate::backend::LeanCommand;
use crate::framing::{encode, FrameError, FrameReader};
use crate::lsp;
use crate::proc::{self, RingLog};
use crate::sandbox::{Sandbox, SandboxConfig};
use leanpool_protocol::Diagnostic;
use lsp_types::{
    DidChangeTextDocumentParams, TextDocumentContentChangeEvent, TextDocumentItem, Uri,
    VersionedTextDocumentIdentifier,
};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant as TokioInstant;

#[derive(Debug, Clone)]
pub struct WorkerConfig {
    pub command: LeanCommand,
    /// Limit for spawn + `initialize` + elaborating the header.
    pub start_timeout: Duration,
    /// How much of the worker's stderr to keep for crash reports.
    pub stderr_log_bytes: usize,
    /// A body elaborated once during `spawn`, after the header. On the
    /// WASM backend the first elaboration after start-up takes 8-25 s (V8
    /// compiling the code paths it hits) and later ones ~0.2 s; a warm-up
    /// moves that cost out of the first caller's request. Not counted in
    /// `uses()`. `None` (the default) skips it.
    pub warmup: Option<String>,
    /// The OS sandbox the process runs in ([`crate::sandbox`]).
    pub sandbox: SandboxConfig,
}

/// A warm-up body touching the usual paths: a tactic proof, `decide`,
/// `simp`, a term proof.
pub const DEFAULT_WARMUP: &str = "theorem leanpool_warmup (a b : Nat) (h : a < b) : a + 1 ≤ b ∧ 2 + 2 = 4 := \
     ⟨by omega, by decide⟩\nexample (l : List Nat) : (l ++ []).length = l.length := by simp\n";

impl WorkerConfig {
    /// Defaults sized for the WASM backend (~25 s to start on 2 idle
    /// cores, 60-100 s on a loaded machine).
    pub fn new(command: LeanCommand) -> Self {
        WorkerConfig {
            command,
            start_timeout: Duration::from_secs(300),
            stderr_log_bytes: 64 * 1024,
            warmup: None,
            sandbox: SandboxConfig::default(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    #[error("could not start Lean: {0}")]
    Spawn(String),
    #[error("the Lean worker died; its stderr ended with:\n{stderr_tail}")]
    Died { stderr_tail: String },
    /// Lean's runtime gave up (`INTERNAL PANIC: out of memory`, ...) while
    /// working on the current document: the text exhausted the process, so
    /// running it again on a fresh worker would end the same way.
    #[error("Lean panicked ({message}); its stderr ended with:\n{stderr_tail}")]
    Panicked { message: String, stderr_tail: String },
    /// The request ran past its limit. The worker has been killed.
    #[error("timed out (the worker was killed)")]
    Timeout,
    #[error("LSP protocol error: {0}")]
    Protocol(String),
    /// Lean's stdout carried a frame the driver did not ask for (a version
    /// never sent, an answer to no request, a malformed frame, a
    /// notification out of place): code running inside the worker can
    /// write to its stdout, so the worker's answers can no longer be
    /// trusted. It has been killed; the request is not retried.
    #[error("the worker wrote a frame the driver did not ask for ({0}); it was killed")]
    Compromised(String),
    /// A bug in leanpool (e.g. a text for another worker's header).
    #[error("internal error: {0}")]
    Internal(String),
    /// Lean answered a request with an error (e.g. an unknown RPC method).
    #[error("Lean returned error {code}: {message}")]
    Lsp { code: i64, message: String },
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Lean's "RPC session expired or unknown, connect again" error code.
const RPC_NEEDS_RECONNECT: i64 = -32900;
/// Reconnect an RPC session that has been idle this long: Lean expires
/// sessions that receive no keep-alive for about 30 s.
const RPC_SESSION_IDLE: Duration = Duration::from_secs(20);

type Reply = Result<Value, (i64, String)>;

/// What the reader task learned; read by the worker under the mutex.
#[derive(Default)]
struct State {
    /// The document's URI: the only one Lean may report about.
    uri: String,
    /// The newest document version sent (1 = `didOpen`): a version above
    /// it was never sent, so a frame naming one is forged.
    sent_version: i32,
    pending: HashMap<i64, oneshot::Sender<Reply>>,
    /// Requests sent without a waiter (`initialize`, which the file worker
    /// does not answer): one answer each is accepted and ignored.
    unwaited: HashSet<i64>,
    /// Set (with [`State::dead`]) when stdout carried a frame the driver
    /// did not ask for.
    compromised: Option<String>,
    /// Highest version reported done (`fileProgress` with nothing left).
    done_version: i32,
    /// Latest `publishDiagnostics` and the version it was for.
    diagnostics: Option<(i32, Vec<lsp::LeanDiagnostic>)>,
    /// Set when stdout closed or could not be read, or Lean panicked.
    dead: Option<String>,
    /// The `INTERNAL PANIC` line, when that is how the worker died.
    panic: Option<String>,
    server_requests: u64,
    /// `publishDiagnostics` that arrived after their version was reported
    /// done: how often the `waitForDiagnostics` barrier mattered.
    late_diagnostics: u64,
    /// Passthrough mode ([`Worker::passthrough`]): every message from Lean
    /// that is not an answer to one of the worker's own requests goes
    /// here, untouched. Dropped when the worker dies, which closes the
    /// receiver.
    tap: Option<mpsc::UnboundedSender<Value>>,
}

impl State {
    /// Records the worker's death (the first reason wins) and drops every
    /// waiting request's sender, which answers it "died".
    fn die(&mut self, reason: String) {
        self.dead.get_or_insert(reason);
        self.pending.clear();
        self.tap = None;
    }

    /// Records a frame the driver did not ask for: the worker is dead to
    /// us from now on (the first violation wins).
    fn violation(&mut self, what: String) {
        tracing::warn!("Lean worker compromised: {what}");
        self.compromised.get_or_insert(what.clone());
        self.die(format!("protocol violation: {what}"));
    }
}

pub struct Worker {
    /// `None` once handed to a background reaper.
    child: Option<tokio::process::Child>,
    pid: u32,
    uri: Uri,
    header: String,
    version: i32,
    next_id: i64,
    state: Arc<Mutex<State>>,
    events: watch::Receiver<()>,
    out: mpsc::UnboundedSender<Vec<u8>>,
    stderr: Arc<Mutex<RingLog>>,
    uses: u64,
    lsp_requests: u64,
    rpc_session: Option<(Value, Instant)>,
    rpc_refs_released: u64,
    /// Killed and reaped: nothing left to clean up on drop.
    reaped: bool,
    /// Its private temp dir goes with the worker.
    sandbox: Sandbox,
    /// Native or WASM (the verdict's default for unlisted axioms).
    backend: crate::backend::BackendKind,
}

impl Worker {
    /// Spawns a worker, runs `initialize`, opens a document holding
    /// `header` and waits until Lean has elaborated it.
    pub async fn spawn(cfg: &WorkerConfig, header: &str) -> Result<Worker, WorkerError> {
        let sandbox = Sandbox::prepare(&cfg.command, &cfg.sandbox).map_err(|e| WorkerError::Spawn(e.to_string()))?;
        let mut cmd = cfg.command.command(&["--worker"]);
        sandbox.apply(&mut cmd);
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = proc::spawn(cmd)
            .map_err(|e| WorkerError::Spawn(format!("{}: {e}", cfg.command.program.display())))?;
        let pid = child.id().ok_or_else(|| WorkerError::Spawn("child exited at once".into()))?;
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr_pipe = child.stderr.take().expect("piped stderr");

        let uri = lsp::document_uri(lsp::DOCUMENT_NAME);
        let state = Arc::new(Mutex::new(State { uri: uri.as_str().to_string(), sent_version: 1, ..State::default() }));
        let stderr = Arc::new(Mutex::new(RingLog::new(cfg.stderr_log_bytes)));
        let (events_tx, events) = watch::channel(());
        let (out, out_rx) = mpsc::unbounded_channel();
        tokio::spawn(write_loop(stdin, out_rx));
        tokio::spawn(read_loop(stdout, state.clone(), events_tx.clone(), out.clone()));
        tokio::spawn(stderr_loop(stderr_pipe, stderr.clone(), state.clone(), events_tx.clone()));

        let mut w = Worker {
            child: Some(child),
            pid,
            uri,
            header: header.to_string(),
            version: 1,
            next_id: 1,
            state,
            events,
            out,
            stderr,
            uses: 0,
            lsp_requests: 0,
            rpc_session: None,
            rpc_refs_released: 0,
            reaped: false,
            sandbox,
            backend: cfg.command.backend,
        };
        let deadline = TokioInstant::now() + cfg.start_timeout;
        match w.start(deadline, cfg.warmup.as_deref()).await {
            Ok(()) => Ok(w),
            Err(e) => {
                let tail = w.stderr_tail();
                w.kill_now();
                Err(match e {
                    WorkerError::Timeout => WorkerError::Spawn(format!(
                        "not ready within {} s; stderr ended with:\n{tail}",
                        cfg.start_timeout.as_secs()
                    )),
                    other => other,
                })
            }
        }
    }

    /// The file-worker handshake. Unlike a full LSP server, Lean's file
    /// worker (normally driven by the watchdog, which answers `initialize`
    /// itself) reads `initialize` and then expects `didOpen` at once; it
    /// does not answer `initialize` and needs no `initialized`. So the
    /// request is sent without waiting, and "ready" means the header's
    /// version is reported done.
    async fn start(&mut self, deadline: TokioInstant, warmup: Option<&str>) -> Result<(), WorkerError> {
        let init = serde_json::to_value(lsp::initialize_params()).expect("serializable");
        let id = self.next_id;
        self.next_id += 1;
        self.lsp_requests += 1;
        self.state.lock().unwrap().unwaited.insert(id);
        self.send(&lsp::request(id, "initialize", init))?;
        let open = lsp::LeanDidOpenTextDocumentParams {
            text_document: TextDocumentItem {
                uri: self.uri.clone(),
                language_id: "lean4".into(),
                version: self.version,
                text: self.header.clone(),
            },
            dependency_build_mode: "never",
        };
        self.notify("textDocument/didOpen", serde_json::to_value(open).expect("serializable"))?;
        self.wait_done(self.version, deadline).await?;
        if let Some(body) = warmup {
            let text = format!("{}{body}", self.header);
            self.change(&text)?;
            self.finish_version(self.version, deadline).await?;
        }
        Ok(())
    }

    /// Sends the whole new text as the next version.
    fn change(&mut self, text: &str) -> Result<(), WorkerError> {
        self.version += 1;
        // Before the send: Lean may answer before this returns.
        self.state.lock().unwrap().sent_version = self.version;
        let change = DidChangeTextDocumentParams {
            text_document: VersionedTextDocumentIdentifier { uri: self.uri.clone(), version: self.version },
            content_changes: vec![TextDocumentContentChangeEvent { range: None, range_length: None, text: text.into() }],
        };
        self.notify("textDocument/didChange", serde_json::to_value(change).expect("serializable"))
    }

    /// Replaces the document with `text` (which must start with this
    /// worker's header) and returns the diagnostics of that version, in
    /// `text`'s coordinates. On timeout the worker is killed.
    pub async fn elaborate(&mut self, text: &str, timeout: Duration) -> Result<Vec<Diagnostic>, WorkerError> {
        if !text.starts_with(&self.header) {
            return Err(WorkerError::Internal("text does not start with this worker's header".into()));
        }
        let deadline = TokioInstant::now() + timeout;
        self.uses += 1;
        self.change(text)?;
        let r = self.finish_version(self.version, deadline).await;
        if matches!(r, Err(WorkerError::Timeout)) {
            self.kill_now();
        }
        r
    }

    /// Waits for `version` to be done, then uses `waitForDiagnostics` as
    /// a barrier: its answer follows every diagnostic of the version on
    /// the same ordered stream, so the latest diagnostics seen then are
    /// final whether they came before or after the done progress.
    async fn finish_version(&mut self, version: i32, deadline: TokioInstant) -> Result<Vec<Diagnostic>, WorkerError> {
        self.wait_done(version, deadline).await?;
        let params = lsp::WaitForDiagnosticsParams { uri: self.uri.clone(), version };
        self.call("textDocument/waitForDiagnostics", serde_json::to_value(params).expect("serializable"), deadline)
            .await?;
        let st = self.state.lock().unwrap();
        Ok(match &st.diagnostics {
            Some((v, diags)) if *v == version => diags.iter().map(lsp::diagnostic_from_lsp).collect(),
            // Lean publishes for every version it elaborates; none at all
            // means nothing to report.
            _ => vec![],
        })
    }

    /// A request about the current document (`self.uri()`), answered
    /// within `timeout`; on timeout the worker is killed, since a request
    /// still running in Lean would delay everything queued after it.
    pub async fn request(&mut self, method: &str, params: Value, timeout: Duration) -> Result<Value, WorkerError> {
        let deadline = TokioInstant::now() + timeout;
        let r = self.call(method, params, deadline).await;
        if matches!(r, Err(WorkerError::Timeout)) {
            self.kill_now();
        }
        r
    }

    /// `$/lean/rpc/call` of `method` at `position` of the current
    /// document, connecting an RPC session first when there is none (or it
    /// may have expired); retried once if Lean asks to reconnect.
    pub async fn rpc_call(
        &mut self,
        method: &str,
        position: lsp_types::Position,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, WorkerError> {
        let deadline = TokioInstant::now() + timeout;
        let mut retried = false;
        loop {
            let session = match &self.rpc_session {
                Some((id, last)) if last.elapsed() < RPC_SESSION_IDLE => id.clone(),
                _ => {
                    let r = self.call("$/lean/rpc/connect", json!({ "uri": self.uri }), deadline).await;
                    let connected: lsp::RpcConnected = match r {
                        Ok(v) => serde_json::from_value(v).map_err(|e| WorkerError::Protocol(e.to_string()))?,
                        Err(e) => return self.after_error(e).await,
                    };
                    connected.session_id
                }
            };
            self.rpc_session = Some((session.clone(), Instant::now()));
            let call = json!({
                "textDocument": { "uri": self.uri },
                "position": position,
                "sessionId": session,
                "method": method,
                "params": params,
            });
            match self.call("$/lean/rpc/call", call, deadline).await {
                Err(WorkerError::Lsp { code: RPC_NEEDS_RECONNECT, .. }) if !retried => {
                    retried = true;
                    self.rpc_session = None;
                }
                Err(e) => return self.after_error(e).await,
                Ok(v) => return Ok(v),
            }
        }
    }

    /// Releases RPC references (`{"p": "…"}` objects, see
    /// [`collect_rpc_refs`]) that Lean handed out in answers of the current
    /// session: each pins goals, infos and expressions in the worker until
    /// released or until the session expires, which under steady load (the
    /// session kept alive by calls) is never. A notification: no answer, not
    /// counted in [`Worker::lsp_requests`]. References of an older session
    /// went with it, so without a session there is nothing to do.
    pub fn rpc_release(&mut self, refs: Vec<Value>) -> Result<(), WorkerError> {
        let Some((session, _)) = &self.rpc_session else { return Ok(()) };
        if refs.is_empty() {
            return Ok(());
        }
        self.rpc_refs_released += refs.len() as u64;
        let params = json!({ "uri": self.uri, "sessionId": session.clone(), "refs": refs });
        self.notify("$/lean/rpc/release", params)
    }

    /// Switches the worker to passthrough (an editor's document,
    /// `leanpool lsp`): from now on every message Lean sends (notifications,
    /// its own requests, answers to requests sent with
    /// [`Worker::send_raw`]) comes out of the returned receiver as is,
    /// instead of being interpreted here; the server's own requests are no
    /// longer answered by the worker. The receiver ends when the worker
    /// dies (stdout closed, `INTERNAL PANIC`, killed). The caller's
    /// request ids must not collide with the worker's own (small positive
    /// integers); the worker's own methods should not be used afterwards.
    pub fn passthrough(&mut self) -> mpsc::UnboundedReceiver<Value> {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut st = self.state.lock().unwrap();
        if st.dead.is_none() {
            st.tap = Some(tx);
        }
        rx
    }

    /// Writes one LSP message to Lean as is (passthrough mode).
    pub fn send_raw(&mut self, msg: &Value) -> Result<(), WorkerError> {
        if self.state.lock().unwrap().dead.is_some() {
            return Err(self.died());
        }
        self.send(msg)
    }

    /// A handle that can write to Lean and kill the process from other
    /// tasks (passthrough mode), while the `Worker` itself stays with its
    /// owner.
    pub fn raw_sender(&self) -> RawSender {
        RawSender { out: self.out.clone(), state: self.state.clone() }
    }

    /// References released so far by [`Worker::rpc_release`].
    pub fn rpc_refs_released(&self) -> u64 {
        self.rpc_refs_released
    }

    async fn after_error<T>(&mut self, e: WorkerError) -> Result<T, WorkerError> {
        if matches!(e, WorkerError::Timeout) {
            self.kill_now();
        }
        Err(e)
    }

    pub fn uri(&self) -> &Uri {
        &self.uri
    }

    pub fn header(&self) -> &str {
        &self.header
    }

    /// Native or WASM.
    pub fn backend(&self) -> crate::backend::BackendKind {
        self.backend
    }

    /// The worker's private, writable temp dir (`None` with the sandbox off).
    pub fn sandbox_dir(&self) -> Option<&std::path::Path> {
        self.sandbox.dir()
    }

    /// Process id, which is also the process group id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Current document version (1 = the header alone).
    pub fn version(&self) -> i32 {
        self.version
    }

    /// Number of `elaborate` calls served.
    pub fn uses(&self) -> u64 {
        self.uses
    }

    /// LSP requests sent to Lean so far (notifications not counted).
    pub fn lsp_requests(&self) -> u64 {
        self.lsp_requests
    }

    /// Requests Lean sent us (answered with `null`).
    pub fn server_requests(&self) -> u64 {
        self.state.lock().unwrap().server_requests
    }

    /// `publishDiagnostics` messages that came after their version's done
    /// progress (they would be missed without the barrier).
    pub fn late_diagnostics(&self) -> u64 {
        self.state.lock().unwrap().late_diagnostics
    }

    /// Resident memory of the worker's process group.
    pub fn rss_bytes(&self) -> Option<u64> {
        if self.reaped {
            return None;
        }
        proc::group_rss_bytes(self.pid)
    }

    /// What the worker wrote to stderr lately.
    pub fn stderr_tail(&self) -> String {
        self.stderr.lock().unwrap().tail()
    }

    pub fn is_alive(&mut self) -> bool {
        let Some(child) = self.child.as_mut().filter(|_| !self.reaped) else { return false };
        if !matches!(child.try_wait(), Ok(None)) {
            // Exited by itself (and now reaped); its group may still have
            // members, so kill them too.
            proc::kill_group(self.pid);
            self.reaped = true;
            return false;
        }
        self.state.lock().unwrap().dead.is_none()
    }

    /// SIGKILLs the process group and waits until the process is reaped.
    pub async fn kill(mut self) {
        if !self.reaped {
            proc::kill_group(self.pid);
            if let Some(child) = self.child.as_mut() {
                let _ = child.wait().await;
            }
            self.mark_dead();
        }
    }

    /// SIGKILLs the process group now and leaves the reaping to a
    /// background task: a timed-out request is answered at once instead of
    /// after the kernel has torn down gigabytes (~1 s for a WASM worker).
    fn kill_now(&mut self) {
        if self.reaped {
            return;
        }
        proc::kill_group(self.pid);
        if let Some(child) = self.child.take() {
            reap_in_background(child, self.pid);
        }
        self.mark_dead();
    }

    fn mark_dead(&mut self) {
        self.reaped = true;
        self.state.lock().unwrap().die("killed".into());
    }

    fn send(&mut self, msg: &Value) -> Result<(), WorkerError> {
        let body = serde_json::to_vec(msg).expect("serializable");
        if self.out.send(encode(&body)).is_err() {
            return Err(self.died());
        }
        Ok(())
    }

    fn notify(&mut self, method: &str, params: Value) -> Result<(), WorkerError> {
        self.send(&lsp::notification(method, params))
    }

    fn died(&mut self) -> WorkerError {
        let stderr_tail = self.stderr_tail();
        let (compromised, panic) = {
            let st = self.state.lock().unwrap();
            (st.compromised.clone(), st.panic.clone())
        };
        if let Some(what) = compromised {
            // Whatever wrote the frame may still run: never reuse it.
            self.kill_now();
            return WorkerError::Compromised(what);
        }
        match panic {
            Some(message) => WorkerError::Panicked { message, stderr_tail },
            None => WorkerError::Died { stderr_tail },
        }
    }

    /// Why the worker may not be trusted, if it wrote a frame the driver
    /// did not ask for.
    pub fn compromised(&self) -> Option<String> {
        self.state.lock().unwrap().compromised.clone()
    }

    /// Sends a request and waits for its answer until `deadline`.
    async fn call(&mut self, method: &str, params: Value, deadline: TokioInstant) -> Result<Value, WorkerError> {
        let id = self.next_id;
        self.next_id += 1;
        let (tx, rx) = oneshot::channel();
        {
            let mut st = self.state.lock().unwrap();
            if st.dead.is_some() {
                drop(st);
                return Err(self.died());
            }
            st.pending.insert(id, tx);
        }
        self.lsp_requests += 1;
        self.send(&lsp::request(id, method, params))?;
        match tokio::time::timeout_at(deadline, rx).await {
            Err(_) => {
                self.state.lock().unwrap().pending.remove(&id);
                Err(WorkerError::Timeout)
            }
            // Sender dropped: the reader saw the stream end.
            Ok(Err(_)) => Err(self.died()),
            Ok(Ok(Err((code, message)))) => Err(WorkerError::Lsp { code, message }),
            Ok(Ok(Ok(v))) => Ok(v),
        }
    }

    /// Waits until Lean reports `version` fully elaborated.
    async fn wait_done(&mut self, version: i32, deadline: TokioInstant) -> Result<(), WorkerError> {
        loop {
            {
                let st = self.state.lock().unwrap();
                if st.done_version >= version {
                    return Ok(());
                }
                if st.dead.is_some() {
                    drop(st);
                    return Err(self.died());
                }
            }
            match tokio::time::timeout_at(deadline, self.events.changed()).await {
                Err(_) => return Err(WorkerError::Timeout),
                // Reader gone; the loop reports it via `dead`.
                Ok(Err(_)) => {
                    let mut st = self.state.lock().unwrap();
                    st.dead.get_or_insert_with(|| "reader ended".into());
                }
                Ok(Ok(())) => {}
            }
        }
    }
}

/// Writes raw LSP messages to one worker's Lean process (see
/// [`Worker::raw_sender`]). Cheap to clone.
#[derive(Clone)]
pub struct RawSender {
    out: mpsc::UnboundedSender<Vec<u8>>,
    state: Arc<Mutex<State>>,
}

impl RawSender {
    /// Queues `msg` for Lean; `false` when the worker is dead or gone.
    pub fn send(&self, msg: &Value) -> bool {
        if self.state.lock().unwrap().dead.is_some() {
            return false;
        }
        let body = serde_json::to_vec(msg).expect("serializable");
        self.out.send(encode(&body)).is_ok()
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // Never leave a 6 GB process behind, nor a zombie (PID 1 of a
        // container may not reap orphans).
        self.kill_now();
    }
}

/// Waits for a killed child off the caller's path: on the current tokio
/// runtime if there is one, else on a plain thread.
fn reap_in_background(mut child: tokio::process::Child, pid: u32) {
    match tokio::runtime::Handle::try_current() {
        Ok(h) => {
            h.spawn(async move {
                let _ = child.wait().await;
            });
        }
        Err(_) => {
            std::thread::spawn(move || {
                let _ = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(pid as i32), None);
                drop(child);
            });
        }
    }
}

async fn write_loop(mut stdin: tokio::process::ChildStdin, mut rx: mpsc::UnboundedReceiver<Vec<u8>>) {
    while let Some(bytes) = rx.recv().await {
        if stdin.write_all(&bytes).await.is_err() || stdin.flush().await.is_err() {
            break;
        }
    }
}

/// Appends every RPC reference in `v` to `out`: Lean encodes one as an
/// object whose only field is `"p"` (a string), e.g. the `info` of a
/// subexpression in interactive goals. Duplicates are kept out.
pub fn collect_rpc_refs(v: &Value, out: &mut Vec<Value>) {
    match v {
        Value::Object(m) if m.len() == 1 && m.get("p").is_some_and(Value::is_string) => {
            if !out.contains(v) {
                out.push(v.clone());
            }
        }
        Value::Object(m) => m.values().for_each(|x| collect_rpc_refs(x, out)),
        Value::Array(a) => a.iter().for_each(|x| collect_rpc_refs(x, out)),
        _ => {}
    }
}

/// What Lean's runtime prints before it gives up on the process
/// (`lean_internal_panic`: out of memory, stack overflow in C code, ...).
/// Native Lean exits right after; the WASM build prints it and then hangs
/// with its threads gone (the 2 GiB heap cap, scripts/wasm/README.md), so
/// the drain treats the line itself as the worker's death instead of
/// letting the request wait for its time limit.
const PANIC_MARKER: &[u8] = b"INTERNAL PANIC";

async fn stderr_loop(
    mut pipe: tokio::process::ChildStderr,
    log: Arc<Mutex<RingLog>>,
    state: Arc<Mutex<State>>,
    events: watch::Sender<()>,
) {
    let mut buf = vec![0u8; 8192];
    // The marker may straddle two reads: keep the end of the previous one.
    let mut carry: Vec<u8> = Vec::new();
    let mut panicked = false;
    while let Ok(n) = pipe.read(&mut buf).await {
        if n == 0 {
            break;
        }
        log.lock().unwrap().push(&buf[..n]);
        if panicked {
            continue;
        }
        carry.extend_from_slice(&buf[..n]);
        if let Some(at) = find(&carry, PANIC_MARKER) {
            panicked = true;
            let line_end = carry[at..].iter().position(|&b| b == b'\n').map_or(carry.len(), |e| at + e);
            let line = String::from_utf8_lossy(&carry[at..line_end]).trim().to_string();
            tracing::warn!("Lean worker panicked: {line}");
            let mut st = state.lock().unwrap();
            st.panic = Some(line.clone());
            // As a closed stdout does.
            st.die(line);
            drop(st);
            events.send_replace(());
        } else {
            let keep = carry.len().saturating_sub(PANIC_MARKER.len() - 1);
            carry.drain(..keep);
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

async fn read_loop(
    stdout: tokio::process::ChildStdout,
    state: Arc<Mutex<State>>,
    events: watch::Sender<()>,
    out: mpsc::UnboundedSender<Vec<u8>>,
) {
    let mut reader = FrameReader::new(stdout);
    loop {
        let body = match reader.next().await {
            Ok(Some(b)) => b,
            Ok(None) => {
                state.lock().unwrap().die("stdout closed".into());
                break;
            }
            Err(FrameError::Io(e)) => {
                state.lock().unwrap().die(e.to_string());
                break;
            }
            Err(e @ FrameError::BadHeader(_)) => {
                state.lock().unwrap().violation(format!("malformed frame: {e}"));
                break;
            }
        };
        let verdict = match serde_json::from_slice::<Value>(&body) {
            Ok(msg) => handle_message(msg, &state, &out),
            Err(e) => Err(format!("a frame that is not JSON: {e}")),
        };
        if let Err(what) = verdict {
            state.lock().unwrap().violation(what);
            break;
        }
        events.send_replace(());
    }
    tracing::debug!("Lean worker reader stopped: {:?}", state.lock().unwrap().dead);
    events.send_replace(());
}

/// Notifications Lean's file worker sends besides progress and
/// diagnostics; accepted and ignored. Any other notification is out of
/// place.
const IGNORED_NOTIFICATIONS: &[&str] = &[
    // Lean's file worker reports its reference index (`.ilean`) and import
    // information to the watchdog with these; none carries a verdict.
    // (Names from the Lean 4.28 server; `$/lean/ileanHeaderInfo` is sent
    // after the header is processed, seen on the WASM build.)
    "$/lean/ileanHeaderInfo",
    "$/lean/ileanHeaderSetupInfo",
    "$/lean/ileanInfoUpdate",
    "$/lean/ileanInfoFinal",
    "$/lean/importClosure",
    "$/lean/staleDependency",
    "window/logMessage",
];

/// Routes one message from Lean. `Err` names a frame the driver did not
/// ask for: the caller marks the worker compromised.
fn handle_message(msg: Value, state: &Mutex<State>, out: &mpsc::UnboundedSender<Vec<u8>>) -> Result<(), String> {
    {
        // Passthrough (an editor's leased document): what is not an answer
        // to the worker's own requests belongs to the editor, unchecked.
        let st = state.lock().unwrap();
        if let Some(tap) = &st.tap {
            let method = msg.get("method");
            let id = msg.get("id");
            let ours = method.is_none() && id.and_then(Value::as_i64).is_some_and(|i| st.pending.contains_key(&i));
            if !ours {
                let _ = tap.send(msg);
                return Ok(());
            }
        }
    }
    let Value::Object(obj) = &msg else { return Err("a message that is not a JSON object".into()) };
    let method = match obj.get("method") {
        None => None,
        Some(Value::String(m)) => Some(m.as_str()),
        Some(_) => return Err("a message whose `method` is not a string".into()),
    };
    match (method, obj.get("id")) {
        (Some(_), Some(id)) => {
            // The server's own requests (`workspace/semanticTokens/refresh`…).
            state.lock().unwrap().server_requests += 1;
            let body = serde_json::to_vec(&lsp::null_response(id)).expect("serializable");
            let _ = out.send(encode(&body));
        }
        (Some("$/lean/fileProgress"), None) => {
            let p = serde_json::from_value::<lsp::FileProgressParams>(msg["params"].clone())
                .map_err(|e| format!("a malformed fileProgress: {e}"))?;
            let mut st = state.lock().unwrap();
            check_document(&st, p.text_document.uri.as_str(), Some(p.text_document.version), "fileProgress")?;
            if p.processing.is_empty() {
                st.done_version = st.done_version.max(p.text_document.version);
            }
        }
        (Some("textDocument/publishDiagnostics"), None) => {
            let p = serde_json::from_value::<lsp::LeanPublishDiagnosticsParams>(msg["params"].clone())
                .map_err(|e| format!("a malformed publishDiagnostics: {e}"))?;
            let mut st = state.lock().unwrap();
            check_document(&st, p.uri.as_str(), p.version, "publishDiagnostics")?;
            let version = p.version.expect("checked");
            // Never let a late message of an older version win.
            let newer = match &st.diagnostics {
                Some((v, _)) => *v <= version,
                None => true,
            };
            if newer {
                st.diagnostics = Some((version, p.diagnostics));
            }
            if version <= st.done_version {
                st.late_diagnostics += 1;
            }
        }
        (Some(m), None) if IGNORED_NOTIFICATIONS.contains(&m) => {}
        (Some(m), None) => return Err(format!("an unexpected notification `{m}`")),
        (None, Some(id)) => {
            let id = id.as_i64().ok_or_else(|| format!("an answer with id {id}, which the driver never sends"))?;
            let reply = match obj.get("error") {
                Some(err) => Err((
                    err.get("code").and_then(Value::as_i64).unwrap_or(0),
                    err.get("message").and_then(Value::as_str).unwrap_or("").to_string(),
                )),
                None => Ok(obj.get("result").cloned().unwrap_or(Value::Null)),
            };
            let mut st = state.lock().unwrap();
            if let Some(tx) = st.pending.remove(&id) {
                let _ = tx.send(reply);
            } else if !st.unwaited.remove(&id) {
                return Err(format!("an answer to request {id}, which is not waiting for one"));
            }
        }
        (None, None) => return Err("a message with neither method nor id".into()),
    }
    Ok(())
}

/// A notification about the document must name this worker's document
/// and a version that was sent.
fn check_document(st: &State, uri: &str, version: Option<i32>, what: &str) -> Result<(), String> {
    if uri != st.uri {
        return Err(format!("a {what} for another document ({uri})"));
    }
    match version {
        None => Err(format!("a {what} without a version")),
        Some(v) if v < 1 || v > st.sent_version => {
            Err(format!("a {what} for version {v}, which was never sent (newest: {})", st.sent_version))
        }
        Some(_) => Ok(()),
    }
}
