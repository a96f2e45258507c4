//! One Lean file-worker process with one warm document.
//!
//! A [`Worker`] is the thin owner of two halves: the LSP connection to the
//! process (`connection.rs`: the pipes and their tasks, request ids, the
//! map of waiting requests, routing, and the frame checks that mark a
//! worker compromised) and the document session on it (`session.rs`:
//! versions, edits, the header, the check flow, the RPC session, and the
//! rule that only this document's sent versions count). The worker is
//! driven by one caller at a time (`&mut self`): a warm Lean document is a
//! single mutable thing, so concurrency belongs to the pool, not here.

use crate::backend::LeanCommand;
use crate::connection::Connection;
use crate::proc;
pub use crate::raw_sender::RawSender;
use crate::sandbox::{Sandbox, SandboxConfig};
pub use crate::session::collect_rpc_refs;
use crate::session::{Conn, DocState, Session};
use leanpool_protocol::Diagnostic;
use leanpool_screen::guard::LeanText;
use lsp_types::Url;

pub use crate::error::WorkerError;
use serde_json::Value;
use std::process::Stdio;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant as TokioInstant;

#[derive(Debug, Clone)]
/// How to start a worker: which Lean, limits, warm-up, sandbox.
pub struct WorkerConfig {
    /// Which Lean to run (native or WASM) and its library path.
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
pub const DEFAULT_WARMUP: &str =
    "theorem leanpool_warmup (a b : Nat) (h : a < b) : a + 1 ≤ b ∧ 2 + 2 = 4 := \
     ⟨by omega, by decide⟩\nexample (l : List Nat) : (l ++ []).length = l.length := by simp\n";

/// Default limit on starting a worker (the pool's `start_timeout_ms`
/// too): sized for the WASM backend, ~25 s to start on 2 idle cores,
/// 60-100 s on a loaded machine.
pub const DEFAULT_START_TIMEOUT: Duration = Duration::from_secs(180);

/// Default bytes of a worker's stderr kept for error messages (the pool's
/// `stderr_log_bytes` too).
pub const DEFAULT_STDERR_LOG_BYTES: usize = 64 * 1024;

impl WorkerConfig {
    /// The defaults: [`DEFAULT_START_TIMEOUT`], [`DEFAULT_STDERR_LOG_BYTES`],
    /// no warm-up, the default sandbox.
    pub fn new(command: LeanCommand) -> Self {
        WorkerConfig {
            command,
            start_timeout: DEFAULT_START_TIMEOUT,
            stderr_log_bytes: DEFAULT_STDERR_LOG_BYTES,
            warmup: None,
            sandbox: SandboxConfig::default(),
        }
    }
}

/// One Lean file-worker process with one warm document: the thin owner of
/// the LSP connection to the process (`connection.rs`: pipes, request ids,
/// routing, frame checks) and the document session on it (`session.rs`:
/// versions, the check flow, the RPC session). Which half enforces which
/// trust rule is said in those modules.
pub struct Worker {
    /// Declared first: dropped (the process group killed) before the
    /// sandbox's directory is removed.
    conn: Conn,
    doc: Session,
    /// Its private temp dir goes with the worker.
    sandbox: Sandbox,
    /// Native or WASM (the verdict's default for unlisted axioms).
    backend: crate::backend::BackendKind,
    /// Whether a time-out kills the process (the default). The pool turns
    /// it off and interrupts Lean itself ([`Worker::set_kill_on_timeout`]).
    kill_on_timeout: bool,
}

impl Worker {
    /// Spawns a worker, runs `initialize`, opens a document holding
    /// `header` and waits until Lean has elaborated it.
    ///
    /// `header` is the one text a worker is sent that is not a
    /// [`LeanText`]: it must be a canonical import header (the pool's key,
    /// [`leanpool_screen::header_key`] of a text, [`leanpool_screen::guard::Screened::header`]):
    /// import commands only, which pass the guard and read back as
    /// themselves. Anything else is refused here (`WorkerError::Spawn`),
    /// before a process starts, so no caller text reaches Lean this way.
    pub async fn spawn(cfg: &WorkerConfig, header: &str) -> Result<Worker, WorkerError> {
        import_header_only(header)?;
        let sandbox = Sandbox::prepare(&cfg.command, &cfg.sandbox)
            .map_err(|e| WorkerError::Spawn(e.to_string()))?;
        let mut cmd = cfg.command.command(&["--worker"]);
        sandbox.apply(&mut cmd);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let child = proc::spawn(cmd)
            .map_err(|e| WorkerError::Spawn(format!("{}: {e}", cfg.command.program.display())))?;
        let pid = child
            .id()
            .ok_or_else(|| WorkerError::Spawn("child exited at once".into()))?;
        let (doc, state) = Session::new(header);
        let conn = Connection::new(child, pid, cfg.stderr_log_bytes, state);
        let mut w = Worker {
            conn,
            doc,
            sandbox,
            backend: cfg.command.backend,
            kill_on_timeout: true,
        };
        let deadline = TokioInstant::now() + cfg.start_timeout;
        match w
            .doc
            .open(&mut w.conn, deadline, cfg.warmup.as_deref())
            .await
        {
            Ok(()) => Ok(w),
            Err(e) => {
                let tail = w.stderr_tail();
                w.conn.kill_now();
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

    /// Replaces the document with `text` (which must start with this
    /// worker's header) and returns the diagnostics of that version, in
    /// `text`'s coordinates. On timeout the worker is killed (unless
    /// [`Worker::set_kill_on_timeout`] turned that off). The text is a
    /// [`LeanText`]: only a screened document (with leanpool's own text
    /// around it) can be elaborated.
    pub async fn elaborate(
        &mut self,
        text: &LeanText,
        timeout: Duration,
    ) -> Result<Vec<Diagnostic>, WorkerError> {
        let messages = self.elaborate_messages(text, timeout).await?;
        Ok(messages.into_iter().map(|m| m.diagnostic).collect())
    }

    /// [`Worker::elaborate`] with what Lean attached to each message
    /// besides its text (error names, tags): what verdicts are read from.
    pub async fn elaborate_messages(
        &mut self,
        text: &LeanText,
        timeout: Duration,
    ) -> Result<Vec<crate::lsp::LeanMessage>, WorkerError> {
        let deadline = TokioInstant::now() + timeout;
        let r = self
            .doc
            .elaborate(&mut self.conn, text.as_str(), deadline)
            .await;
        self.after(r)
    }

    /// Replaces the document with its import header alone (what the pool
    /// sends to interrupt an elaboration) and waits for that version, as
    /// [`Worker::elaborate`] does.
    pub async fn elaborate_header(
        &mut self,
        timeout: Duration,
    ) -> Result<Vec<Diagnostic>, WorkerError> {
        let deadline = TokioInstant::now() + timeout;
        let header = self.doc.header().to_owned();
        let r = self.doc.elaborate(&mut self.conn, &header, deadline).await;
        let r = r.map(|ms| ms.into_iter().map(|m| m.diagnostic).collect());
        self.after(r)
    }

    /// A request about the current document (`self.uri()`), answered
    /// within `timeout`; on timeout the worker is killed, since a request
    /// still running in Lean would delay everything queued after it. A
    /// method that carries document text (`raw_sender::TEXT_METHODS`)
    /// is refused: text reaches Lean only as a `LeanText`
    /// ([`Worker::elaborate`], [`RawSender::send_text`]).
    pub async fn request(
        &mut self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, WorkerError> {
        if crate::raw_sender::TEXT_METHODS.contains(&method) {
            return Err(WorkerError::Internal(format!(
                "`{method}` carries document text: a worker is sent text only as a screened \
                 LeanText (Worker::elaborate)"
            )));
        }
        let deadline = TokioInstant::now() + timeout;
        let r = self.conn.call(method, params, deadline).await;
        self.after(r)
    }

    /// `$/lean/rpc/call` of `method` at `position` of the current
    /// document, connecting an RPC session first when there is none (or it
    /// may have expired); retried once if Lean asks to reconnect. On
    /// timeout the worker is killed.
    pub async fn rpc_call(
        &mut self,
        method: &str,
        position: lsp_types::Position,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, WorkerError> {
        let deadline = TokioInstant::now() + timeout;
        let r = self
            .doc
            .rpc_call(&mut self.conn, method, position, params, deadline)
            .await;
        self.after(r)
    }

    /// Releases RPC references (`{"p": "…"}` objects, see
    /// [`collect_rpc_refs`]) that Lean handed out in answers of the current
    /// session: each pins goals, infos and expressions in the worker until
    /// released or until the session expires, which under steady load (the
    /// session kept alive by calls) is never. A notification: no answer, not
    /// counted in [`Worker::lsp_requests`]. References of an older session
    /// went with it, so without a session there is nothing to do.
    pub fn rpc_release(&mut self, refs: Vec<Value>) -> Result<(), WorkerError> {
        self.doc.rpc_release(&mut self.conn, refs)
    }

    /// Switches the worker to passthrough (an editor's document,
    /// `leanpool lsp`): from now on every message Lean sends (notifications,
    /// its own requests, answers to requests sent with [`RawSender::send`],
    /// which refuses the messages that carry document text: those go as a
    /// `LeanText` through [`RawSender::send_text`]) comes out of the
    /// returned receiver as is, instead of being interpreted here; the server's own requests are no
    /// longer answered by the worker. The receiver ends when the worker
    /// dies (stdout closed, `INTERNAL PANIC`, killed). The caller's
    /// request ids must not collide with the worker's own (small positive
    /// integers); the worker's own methods should not be used afterwards.
    pub fn passthrough(&mut self) -> mpsc::UnboundedReceiver<Value> {
        self.conn.passthrough()
    }

    /// A handle that can write to Lean and kill the process from other
    /// tasks (passthrough mode), while the `Worker` itself stays with its
    /// owner.
    pub fn raw_sender(&self) -> RawSender {
        self.conn.raw_sender()
    }

    /// References released so far by [`Worker::rpc_release`].
    pub fn rpc_refs_released(&self) -> u64 {
        self.doc.rpc_refs_released()
    }

    /// A request that ran out of time is still running in Lean and would
    /// delay everything queued after it: the worker goes, unless its owner
    /// interrupts Lean itself ([`Worker::set_kill_on_timeout`]).
    fn after<T>(&mut self, r: Result<T, WorkerError>) -> Result<T, WorkerError> {
        if self.kill_on_timeout && matches!(r, Err(WorkerError::Timeout)) {
            self.conn.kill_now();
        }
        r
    }

    /// `false`: a time-out of [`Worker::elaborate`], [`Worker::request`] or
    /// [`Worker::rpc_call`] returns [`WorkerError::Timeout`] with the
    /// process left alive and Lean still working on the timed-out version
    /// or request. The caller must then interrupt it (a new edit, e.g. the
    /// bare header, which makes Lean cancel the older version's
    /// elaboration) or kill it before using the worker for anything else.
    /// A late answer to a timed-out request is accepted and ignored; late
    /// diagnostics of the older version never count for a newer one. The
    /// default is `true` (killed at once).
    pub fn set_kill_on_timeout(&mut self, kill: bool) {
        self.kill_on_timeout = kill;
    }

    /// The URI of the worker's one document (the same for every worker).
    pub fn uri(&self) -> &Url {
        self.doc.uri()
    }

    /// The canonical import header the document was opened with.
    pub fn header(&self) -> &str {
        self.doc.header()
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
        self.conn.pid()
    }

    /// Current document version (1 = the header alone).
    pub fn version(&self) -> i32 {
        self.doc.version()
    }

    /// Number of `elaborate` calls served.
    pub fn uses(&self) -> u64 {
        self.doc.uses()
    }

    /// Whether no caller's text or request has reached this process yet:
    /// its document is still the header (and warm-up body) it was opened
    /// with and it never opened an RPC session. Only such a worker may be
    /// leased (a lease must not see another caller's document).
    pub fn pristine(&self) -> bool {
        self.doc.pristine()
    }

    /// LSP requests sent to Lean so far (notifications not counted).
    pub fn lsp_requests(&self) -> u64 {
        self.conn.requests()
    }

    /// Requests Lean sent us (answered with `null`).
    pub fn server_requests(&self) -> u64 {
        self.conn.server_requests()
    }

    /// `publishDiagnostics` messages that came after their version's done
    /// progress (they would be missed without the barrier).
    pub fn late_diagnostics(&self) -> u64 {
        self.conn.handler(DocState::late_diagnostics)
    }

    /// Resident memory of the worker's process group.
    pub fn rss_bytes(&self) -> Option<u64> {
        self.conn.rss_bytes()
    }

    /// What the worker wrote to stderr lately.
    pub fn stderr_tail(&self) -> String {
        self.conn.stderr_tail()
    }

    /// Whether the process is still usable: it has not exited and the
    /// driver has not given it up (stdout closed, a frame it did not ask
    /// for, a Lean panic). An exited process is reaped and its group
    /// killed here.
    pub fn is_alive(&mut self) -> bool {
        self.conn.is_alive()
    }

    /// SIGKILLs the process group and waits until the process is reaped.
    pub async fn kill(mut self) {
        self.conn.kill().await;
    }

    /// Why the worker may not be trusted, if it wrote a frame the driver
    /// did not ask for.
    pub fn compromised(&self) -> Option<String> {
        self.conn.compromised()
    }
}

/// `Ok` when `header` is a canonical import header: it passes the guard,
/// it is its document's import header, and nothing follows it.
fn import_header_only(header: &str) -> Result<(), WorkerError> {
    let refuse = |why: String| {
        WorkerError::Spawn(format!(
            "a worker's header must be a canonical import header (imports only, as \
             `check::header_key` makes it): {why}"
        ))
    };
    let s = leanpool_screen::guard::screen(header, &leanpool_screen::guard::GuardPolicy::default())
        .map_err(|r| refuse(r.to_string()))?;
    if s.header() != header || !s.body_tokens().is_empty() {
        return Err(refuse(format!("{header:?} is not one")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::import_header_only;

    #[test]
    fn a_worker_header_is_imports_only() {
        for h in [
            "",
            "import Init\n",
            &leanpool_screen::header_key("import Init\nimport Std\ntheorem t : True := trivial"),
            &leanpool_screen::header_key("import «Init».«Data».List\ntheorem t : True := trivial"),
        ] {
            assert!(
                import_header_only(h).is_ok(),
                "{h:?}: {:?}",
                import_header_only(h)
            );
        }
        for h in [
            "import Init\n#eval 1\n",
            "import Init\ntheorem t : True := trivial\n",
            "#eval IO.println \"x\"",
            "import Init\nset_option pp.all true\n",
            "import «..».«..».tmp.X\n",
            "import «Init.Data»\n",
        ] {
            assert!(import_header_only(h).is_err(), "{h:?}");
        }
    }
}
