//! The LSP connection to one Lean process: the process and its three
//! pipes, request ids and the map of requests waiting for an answer, and
//! the tasks that move bytes (the connection half of a [`Worker`], as
//! rust-analyzer's `lsp-server` keeps its `Connection` apart from what
//! the messages mean).
//!
//! Three tasks per process: a writer (stdin), a reader (stdout: routes
//! answers by id to the waiting request, answers the server's own
//! requests, hands every notification to the document's
//! [`Notifications`] handler) and a stderr drain into a bounded
//! [`RingLog`] that also watches for Lean's `INTERNAL PANIC`.
//!
//! **Trust rules enforced here** (docs/threat-model.md), with
//! the one frame filter every LSP path shares (`frames.rs`: the shape of
//! a message and what a notification may report on, also applied by the
//! leased-worker gate): every frame on stdout must be one the driver
//! asked for. A malformed frame, a frame that is not a JSON object, a
//! `method` that is not a string, an answer with an id the driver never
//! sends or to a request that is not waiting for one, a message with
//! neither method nor id, and any notification the handler refuses
//! ([`Violation`]) mark the connection compromised: it is dead from then on, every waiting request is
//! answered [`WorkerError::Compromised`] and the process is killed the
//! first time a caller sees it. Which notifications are acceptable (which
//! document, which versions) is the document session's rule
//! (`session.rs`).
//!
//! [`Worker`]: crate::Worker

use crate::error::WorkerError;
pub(crate) use crate::frames::Violation;
use crate::framing::encode;
use crate::lsp;
use crate::proc::{self, RingLog};
use crate::raw_sender::{Liveness, RawSender};
use leanpool_protocol::pending::Pending;
use serde_json::Value;
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant as TokioInstant;

mod tasks;

use tasks::{read_loop, reap_in_background, stderr_loop, write_loop};

/// What the connection hands Lean's notifications to: the document
/// session's record of progress and diagnostics. Called on the reader
/// task under the connection's lock, so a waiter that reads the record
/// with [`Connection::wait_until`] sees it and the connection's liveness
/// at one instant.
pub(crate) trait Notifications: Send + 'static {
    /// Takes one notification (`params` may be missing: `Null`). `Err`
    /// refuses it: the worker is compromised.
    fn notification(&mut self, method: &str, params: &Value) -> Result<(), Violation>;
}

/// An answer as Lean sent it: `result`, or `error`'s code and message.
type Reply = Result<Value, (i64, String)>;

/// What the reader and stderr tasks learned; read by the owner under the
/// mutex.
struct Shared<N> {
    /// Requests sent and not yet answered, with their ids (the same
    /// bookkeeping as the Rust client's): requests a caller waits on, and
    /// requests sent without a waiter (`initialize`, which the file worker
    /// does not answer, and abandoned calls), whose one answer is
    /// accepted and ignored.
    pending: Pending<oneshot::Sender<Reply>>,
    /// The document's notification handler (its record lives here, under
    /// the same lock as the liveness below).
    handler: N,
    /// Set (with [`Shared::dead`]) when stdout carried a frame the driver
    /// did not ask for.
    compromised: Option<String>,
    /// Set when stdout closed or could not be read, Lean panicked, the
    /// process was killed or compromised.
    dead: Option<String>,
    /// The `INTERNAL PANIC` line, when that is how the worker died.
    panic: Option<String>,
    /// Requests Lean sent us (answered with `null`).
    server_requests: u64,
    /// Passthrough mode ([`Connection::passthrough`]): every message from
    /// Lean that is not an answer to one of the connection's own requests
    /// goes here, untouched. Dropped when the worker dies, which closes
    /// the receiver.
    tap: Option<mpsc::UnboundedSender<Value>>,
}

impl<N> Shared<N> {
    /// Records the worker's death (the first reason wins) and drops every
    /// waiting request's sender, which answers it "died".
    fn die(&mut self, reason: String) {
        self.dead.get_or_insert(reason);
        self.pending.drain().for_each(drop);
        self.tap = None;
    }

    /// Records a frame the driver did not ask for: the worker is dead to
    /// us from now on (the first violation wins).
    fn violation(&mut self, what: Violation) {
        let what = what.to_string();
        tracing::warn!("Lean worker compromised: {what}");
        self.compromised.get_or_insert(what.clone());
        self.die(format!("protocol violation: {what}"));
    }
}

impl<N: Send> Liveness for Mutex<Shared<N>> {
    fn is_dead(&self) -> bool {
        self.lock().unwrap().dead.is_some()
    }
}

/// The LSP connection to one Lean process, which it owns: dropping it
/// kills the process group.
pub(crate) struct Connection<N> {
    /// `None` once handed to a background reaper.
    child: Option<tokio::process::Child>,
    pid: u32,
    /// Killed and reaped: nothing left to clean up on drop.
    reaped: bool,
    /// Requests sent (notifications not counted).
    requests: u64,
    shared: Arc<Mutex<Shared<N>>>,
    events: watch::Receiver<()>,
    out: mpsc::UnboundedSender<Vec<u8>>,
    stderr: Arc<Mutex<RingLog>>,
}

impl<N: Notifications> Connection<N> {
    /// Takes over `child` (process `pid`, which leads its own process
    /// group, stdio piped) and starts the three tasks; `handler` receives
    /// Lean's notifications.
    pub fn new(
        mut child: tokio::process::Child,
        pid: u32,
        stderr_log_bytes: usize,
        handler: N,
    ) -> Self {
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr_pipe = child.stderr.take().expect("piped stderr");

        let shared = Arc::new(Mutex::new(Shared {
            pending: Pending::new(),
            handler,
            compromised: None,
            dead: None,
            panic: None,
            server_requests: 0,
            tap: None,
        }));
        let stderr = Arc::new(Mutex::new(RingLog::new(stderr_log_bytes)));
        let (events_tx, events) = watch::channel(());
        let (out, out_rx) = mpsc::unbounded_channel();
        tokio::spawn(write_loop(stdin, out_rx));
        tokio::spawn(read_loop(
            stdout,
            shared.clone(),
            events_tx.clone(),
            out.clone(),
        ));
        tokio::spawn(stderr_loop(
            stderr_pipe,
            stderr.clone(),
            shared.clone(),
            events_tx.clone(),
        ));
        Connection {
            child: Some(child),
            pid,
            reaped: false,
            requests: 0,
            shared,
            events,
            out,
            stderr,
        }
    }

    /// Reads the handler's record.
    pub fn handler<R>(&self, f: impl FnOnce(&N) -> R) -> R {
        f(&self.shared.lock().unwrap().handler)
    }

    /// Changes the handler's record (before a send whose answer depends on
    /// it: Lean may answer before the send returns).
    pub fn handler_mut<R>(&self, f: impl FnOnce(&mut N) -> R) -> R {
        f(&mut self.shared.lock().unwrap().handler)
    }

    /// Sends a request nobody waits for: its one answer, if Lean sends
    /// one, is accepted and ignored.
    pub fn request_unwaited(&mut self, method: &str, params: Value) -> Result<(), WorkerError> {
        self.requests += 1;
        let id = self.shared.lock().unwrap().pending.start_unwaited();
        self.send(&lsp::request(id, method, params))
    }

    /// Sends a request and waits for its answer until `deadline`.
    pub async fn call(
        &mut self,
        method: &str,
        params: Value,
        deadline: TokioInstant,
    ) -> Result<Value, WorkerError> {
        let (tx, rx) = oneshot::channel();
        let id = {
            let mut st = self.shared.lock().unwrap();
            if st.dead.is_some() {
                drop(st);
                return Err(self.died());
            }
            st.pending.start(tx)
        };
        self.requests += 1;
        self.send(&lsp::request(id, method, params))?;
        match tokio::time::timeout_at(deadline, rx).await {
            Err(_) => {
                // Abandoned, not forgotten: a worker kept after a time-out
                // (the pool interrupts Lean instead of killing it) may still
                // answer this request; that one answer is accepted and
                // ignored, any other answer to it stays a violation.
                self.shared.lock().unwrap().pending.abandon(id);
                Err(WorkerError::Timeout)
            }
            // Sender dropped: the reader saw the stream end.
            Ok(Err(_)) => Err(self.died()),
            Ok(Ok(Err((code, message)))) => Err(WorkerError::Lsp { code, message }),
            Ok(Ok(Ok(v))) => Ok(v),
        }
    }

    pub fn notify(&mut self, method: &str, params: Value) -> Result<(), WorkerError> {
        self.send(&lsp::notification(method, params))
    }

    /// Queues one message for Lean.
    pub fn send(&mut self, msg: &Value) -> Result<(), WorkerError> {
        let body = serde_json::to_vec(msg).expect("serializable");
        if self.out.send(encode(&body)).is_err() {
            return Err(self.died());
        }
        Ok(())
    }

    /// Waits until `done` holds for the handler's record, or the worker
    /// dies, or `deadline` passes ([`WorkerError::Timeout`]; nothing is
    /// killed).
    pub async fn wait_until(
        &mut self,
        deadline: TokioInstant,
        done: impl Fn(&N) -> bool,
    ) -> Result<(), WorkerError> {
        loop {
            {
                let st = self.shared.lock().unwrap();
                if done(&st.handler) {
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
                    let mut st = self.shared.lock().unwrap();
                    st.dead.get_or_insert_with(|| "reader ended".into());
                }
                Ok(Ok(())) => {}
            }
        }
    }

    /// The error for a dead worker: compromised (the process is killed
    /// now: whatever wrote the frame may still run), panicked, or died.
    pub fn died(&mut self) -> WorkerError {
        let stderr_tail = self.stderr_tail();
        let (compromised, panic) = {
            let st = self.shared.lock().unwrap();
            (st.compromised.clone(), st.panic.clone())
        };
        if let Some(what) = compromised {
            // Whatever wrote the frame may still run: never reuse it.
            self.kill_now();
            return WorkerError::Compromised(what);
        }
        match panic {
            Some(message) => WorkerError::Panicked {
                message,
                stderr_tail,
            },
            None => WorkerError::Died { stderr_tail },
        }
    }

    /// Why the worker may not be trusted, if it wrote a frame the driver
    /// did not ask for.
    pub fn compromised(&self) -> Option<String> {
        self.shared.lock().unwrap().compromised.clone()
    }

    /// Switches to passthrough: see [`crate::Worker::passthrough`].
    pub fn passthrough(&mut self) -> mpsc::UnboundedReceiver<Value> {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut st = self.shared.lock().unwrap();
        if st.dead.is_none() {
            st.tap = Some(tx);
        }
        rx
    }

    pub fn raw_sender(&self) -> RawSender {
        RawSender::new(self.out.clone(), self.shared.clone())
    }

    /// Requests sent so far (notifications not counted).
    pub fn requests(&self) -> u64 {
        self.requests
    }

    /// Requests Lean sent us (answered with `null`).
    pub fn server_requests(&self) -> u64 {
        self.shared.lock().unwrap().server_requests
    }

    /// Process id, which is also the process group id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Resident memory of the process group.
    pub fn rss_bytes(&self) -> Option<u64> {
        if self.reaped {
            return None;
        }
        proc::worker_rss_bytes(self.pid)
    }

    /// What the process wrote to stderr lately.
    pub fn stderr_tail(&self) -> String {
        self.stderr.lock().unwrap().tail()
    }

    pub fn is_alive(&mut self) -> bool {
        let Some(child) = self.child.as_mut().filter(|_| !self.reaped) else {
            return false;
        };
        if !matches!(child.try_wait(), Ok(None)) {
            // Exited by itself (and now reaped); its group may still have
            // members, so kill them too.
            proc::kill_group(self.pid);
            self.reaped = true;
            return false;
        }
        self.shared.lock().unwrap().dead.is_none()
    }

    /// SIGKILLs the process group and waits until the process is reaped.
    pub async fn kill(&mut self) {
        if !self.reaped {
            proc::kill_group(self.pid);
            if let Some(child) = self.child.as_mut() {
                let _ = child.wait().await;
            }
            self.mark_dead();
        }
    }
}

impl<N> Connection<N> {
    /// SIGKILLs the process group now and leaves the reaping to a
    /// background task: a timed-out request is answered at once instead of
    /// after the kernel has torn down gigabytes (~1 s for a WASM worker).
    pub fn kill_now(&mut self) {
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
        self.shared.lock().unwrap().die("killed".into());
    }
}

impl<N> Drop for Connection<N> {
    fn drop(&mut self) {
        // Never leave a 6 GB process behind, nor a zombie (PID 1 of a
        // container may not reap orphans).
        self.kill_now();
    }
}
