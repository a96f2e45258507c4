//! Async client: one connection, many requests in flight.
//!
//! Calls may be made concurrently from any number of tasks sharing one
//! `Client` (`&self` methods). Lines are written by a single writer task so
//! that a caller dropping its future mid-call can never leave half a request
//! on the wire; answers are matched to callers by id by a single reader task.

use crate::framing::{Frame, FrameReader};
use leanpool_protocol::method::Method;
use leanpool_protocol::pending::{Completion, Pending};
use leanpool_protocol::{ErrorCode, Id, Request, RpcError};
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::sync::{mpsc, oneshot};

/// Answers can be big (trees, diagnostics): the cap only guards against a
/// runaway peer.
const MAX_ANSWER_BYTES: usize = 1 << 30;

/// Why a call gave no result.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The socket could not be reached.
    #[error("cannot connect to {path}: {source}")]
    Connect {
        /// The socket's path.
        path: PathBuf,
        /// What `connect` said.
        source: std::io::Error,
    },
    /// The connection ended before the answer came (the text says how).
    #[error("connection to the daemon lost: {0}")]
    Closed(String),
    /// The daemon answered with an error.
    #[error("daemon answered error {}: {}", .0.code, .0.message)]
    Rpc(RpcError),
    /// The request's params could not be written as JSON (nothing was
    /// sent): a problem on this side.
    #[error("cannot encode the request: {0}")]
    Encode(String),
    /// The daemon's answer was not what the method returns (or not an
    /// answer at all).
    #[error("cannot decode the daemon's answer: {0}")]
    Decode(String),
}

impl ClientError {
    /// The JSON-RPC error code, for errors the daemon sent.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            ClientError::Rpc(e) => Some(e.code),
            _ => None,
        }
    }
}

type Reply = Result<Box<RawValue>, ClientError>;

/// An answer as read: the result stays encoded until the caller says what
/// type it wants.
#[derive(Deserialize)]
struct RawResponse {
    #[serde(default)]
    id: Option<Id>,
    #[serde(default)]
    result: Option<Box<RawValue>>,
    #[serde(default)]
    error: Option<RpcError>,
}

/// The connection's calls waiting for their answers (the same id
/// bookkeeping as the Lean worker's connection), and how it ended.
struct Calls {
    pending: Pending<oneshot::Sender<Reply>>,
    /// Set when the connection is over; later calls fail with it at once.
    closed: Option<String>,
    /// The connection-level error that ended it, if the daemon sent one.
    closed_by: Option<RpcError>,
}

/// A connection to a `leanpool serve` daemon. Calls are pipelined: any
/// number may be in flight at once, from any task; each is matched to its
/// answer by id.
///
/// A round trip (compiled by `cargo test`, not run: it needs a daemon on
/// the socket, e.g. `leanpool serve --socket /tmp/lp.sock`):
///
/// Every method is called the same way, by its type
/// ([`leanpool_protocol::method`]): [`Client::request`].
///
/// ```no_run
/// use leanpool_protocol::method::{self, NoParams};
/// use leanpool_protocol::{CheckParams, CheckStatus, GtedParams};
/// use leanpool_rpc::Client;
/// use serde_json::json;
///
/// # async fn round_trip() -> Result<(), leanpool_rpc::ClientError> {
/// let client = Client::connect("/tmp/lp.sock").await?;
/// let text = "theorem t : 1 + 1 = 2 := rfl\n".to_string();
/// let p = CheckParams::new(text).with_timeout_ms(60_000);
/// let r = client.request::<method::Check>(&p).await?;
/// assert_eq!(r.status, CheckStatus::Ok);
/// // `gted` needs no Lean: the daemon scores two operator trees itself.
/// let a = json!({"content": "_ + _", "children": [{"content": "x"}, {"content": "1"}]});
/// let g = client.request::<method::Gted>(&GtedParams { a: a.clone(), b: a, mode: None }).await?;
/// assert_eq!(g.similarity, 1.0);
/// let status = client.request::<method::Status>(&NoParams).await?;
/// # Ok(())
/// # }
/// ```
pub struct Client {
    lines: mpsc::UnboundedSender<Vec<u8>>,
    calls: Arc<Mutex<Calls>>,
    tasks: [tokio::task::JoinHandle<()>; 2],
}

impl Drop for Client {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl Client {
    /// Connects to the daemon's socket at `path` (one attempt; see
    /// [`Client::connect_retry`]).
    pub async fn connect(path: impl AsRef<Path>) -> Result<Client, ClientError> {
        let path = path.as_ref();
        let stream = UnixStream::connect(path)
            .await
            .map_err(|source| ClientError::Connect {
                path: path.to_owned(),
                source,
            })?;
        Ok(Client::from_stream(stream))
    }

    /// Connects, retrying until `within` has passed: for clients that
    /// outlive a daemon restart.
    pub async fn connect_retry(
        path: impl AsRef<Path>,
        within: Duration,
    ) -> Result<Client, ClientError> {
        let t0 = Instant::now();
        let mut pause = Duration::from_millis(20);
        loop {
            match Client::connect(path.as_ref()).await {
                Ok(c) => return Ok(c),
                Err(e) if t0.elapsed() >= within => return Err(e),
                Err(_) => {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(500));
                }
            }
        }
    }

    /// A client on an already connected stream; starts its reader and
    /// writer tasks (needs a tokio runtime).
    pub fn from_stream(stream: UnixStream) -> Client {
        let (rd, mut wr) = stream.into_split();
        let calls = Arc::new(Mutex::new(Calls {
            pending: Pending::new(),
            closed: None,
            closed_by: None,
        }));
        let (lines, mut rx) = mpsc::unbounded_channel::<Vec<u8>>();
        let p = calls.clone();
        let writer = tokio::spawn(async move {
            while let Some(line) = rx.recv().await {
                if let Err(e) = wr.write_all(&line).await {
                    fail_all(&p, format!("write failed: {e}"), None);
                    return;
                }
            }
        });
        let p = calls.clone();
        let reader = tokio::spawn(async move {
            let mut frames =
                FrameReader::new(BufReader::with_capacity(64 << 10, rd), MAX_ANSWER_BYTES);
            // An error addressed to no request (id null) is about the whole
            // connection (e.g. UNAUTHORIZED); pending calls inherit it.
            let mut general: Option<RpcError> = None;
            let why = loop {
                match frames.next_frame().await {
                    Ok(Some(Frame::Line(l))) => match serde_json::from_slice::<RawResponse>(&l) {
                        Ok(r) => route(&p, r, &mut general),
                        Err(e) => break format!("undecodable answer: {e}"),
                    },
                    Ok(Some(Frame::TooLarge { len, .. })) => {
                        break format!("answer of {len} bytes exceeds the client's cap")
                    }
                    Ok(None) => break "the daemon closed the connection".to_string(),
                    Err(e) => break format!("read failed: {e}"),
                }
            };
            fail_all(&p, why, general);
        });
        Client {
            lines,
            calls,
            tasks: [writer, reader],
        }
    }

    /// Sends one request and waits for its answer. Dropping the future
    /// forgets the request on this side (the daemon still answers it).
    pub async fn call(&self, method: &str, params: Value) -> Result<Value, ClientError> {
        let raw = self.call_raw(method, params).await?;
        serde_json::from_str(raw.get()).map_err(|e| ClientError::Decode(e.to_string()))
    }

    /// [`Client::call`] returning the result exactly as the daemon encoded
    /// it (field order kept), e.g. to copy it into a file.
    pub async fn call_raw(
        &self,
        method: &str,
        params: Value,
    ) -> Result<Box<RawValue>, ClientError> {
        let (tx, rx) = oneshot::channel();
        let id = {
            let mut c = self.calls.lock().unwrap();
            if let Some(e) = &c.closed_by {
                return Err(ClientError::Rpc(e.clone()));
            }
            if let Some(why) = &c.closed {
                return Err(ClientError::Closed(why.clone()));
            }
            c.pending.start(tx)
        };
        let _forget = Forget {
            calls: &self.calls,
            id,
        };
        // `id` before `params` (struct field order) so that the daemon can
        // address even a too-large request's error to it.
        let req = Request {
            jsonrpc: "2.0".into(),
            id: Id::Num(id),
            method: method.into(),
            params,
        };
        let mut line = serde_json::to_vec(&req)
            .map_err(|e| ClientError::Encode(format!("`{method}`: {e}")))?;
        line.push(b'\n');
        if self.lines.send(line).is_err() {
            return Err(ClientError::Closed("writer stopped".into()));
        }
        rx.await
            .unwrap_or_else(|_| Err(ClientError::Closed("connection dropped".into())))
    }

    /// Calls method `M` ([`leanpool_protocol::method`]): its name, params
    /// and result type come from one place.
    pub async fn request<M: Method>(&self, params: &M::Params) -> Result<M::Result, ClientError> {
        self.call_typed(M::NAME, params).await
    }

    /// [`Client::call`] with typed params and result, for a method this
    /// crate does not know ([`Client::request`] for those it does).
    pub async fn call_typed<P: Serialize, R: DeserializeOwned>(
        &self,
        method: &str,
        params: &P,
    ) -> Result<R, ClientError> {
        let params = serde_json::to_value(params)
            .map_err(|e| ClientError::Encode(format!("`{method}` params: {e}")))?;
        let raw = self.call_raw(method, params).await?;
        serde_json::from_str(raw.get())
            .map_err(|e| ClientError::Decode(format!("`{method}` result: {e}")))
    }
}

/// Removes a call's entry if its future is dropped before the answer.
struct Forget<'a> {
    calls: &'a Mutex<Calls>,
    id: i64,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        if let Ok(mut c) = self.calls.lock() {
            c.pending.forget(self.id);
        }
    }
}

fn route(p: &Mutex<Calls>, r: RawResponse, general: &mut Option<RpcError>) {
    let reply = match (r.result, r.error) {
        (_, Some(e)) => Err(ClientError::Rpc(e)),
        (Some(v), None) => Ok(v),
        (None, None) => Err(ClientError::Decode(
            "answer with neither `result` nor `error`".into(),
        )),
    };
    match r.id {
        Some(Id::Num(id)) => {
            // An answer to a call no one waits for any more (its future
            // was dropped) is dropped too.
            if let Completion::Waiting(tx) = p.lock().unwrap().pending.complete(id) {
                let _ = tx.send(reply);
            }
        }
        _ => {
            if let Err(ClientError::Rpc(e)) = reply {
                tracing::warn!(code = e.code.code(), message = %e.message, "daemon error not addressed to a request");
                *general = Some(e);
            }
        }
    }
}

fn fail_all(p: &Mutex<Calls>, why: String, general: Option<RpcError>) {
    let mut p = p.lock().unwrap();
    let general = general.filter(|e| e.code != ErrorCode::ParseError);
    for tx in p.pending.drain() {
        let _ = tx.send(Err(match &general {
            Some(e) => ClientError::Rpc(e.clone()),
            None => ClientError::Closed(why.clone()),
        }));
    }
    if p.closed.is_none() {
        p.closed = Some(why);
        p.closed_by = general;
    }
}
