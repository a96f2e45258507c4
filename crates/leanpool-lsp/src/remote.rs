//! Workers leased from a running daemon (`leanpool lsp --socket`): one
//! connection per document, which after the daemon's `lease` answer
//! carries the worker's LSP messages, one JSON object per line each way
//! (docs/protocol.md, "lease"). The daemon guards the tunnel itself; it
//! takes whole texts only, so every edit goes out as the full text.

use leanpool_protocol::method::{self, Method};
use leanpool_protocol::{ErrorCode, Id, LeaseParams, LeaseResult, Request, Response};
use serde_json::Value;
use std::path::{Path, PathBuf};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::UnixStream;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// A lease: the worker's document as the daemon reported it and the two
/// halves of the tunnel.
pub(crate) struct RemoteLease {
    pub uri: String,
    pub version: i64,
    pub pid: u32,
    /// The imports the worker holds (the daemon's header key).
    pub header: String,
    /// Lean's messages (and the daemon's `$/leanpool/*` ones); ends when
    /// the connection does.
    pub rx: Option<mpsc::UnboundedReceiver<Value>>,
    pub tx: mpsc::UnboundedSender<Value>,
    tasks: Vec<JoinHandle<()>>,
}

impl RemoteLease {
    /// Closes the connection: the daemon kills the worker.
    pub fn close(&mut self) {
        for t in self.tasks.drain(..) {
            t.abort();
        }
    }
}

impl Drop for RemoteLease {
    fn drop(&mut self) {
        self.close();
    }
}

/// Why no worker could be leased from the daemon.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LeaseError {
    #[error("cannot connect to the leanpool daemon at {}: {source}", socket.display())]
    Connect {
        socket: PathBuf,
        source: std::io::Error,
    },
    #[error("the leanpool daemon at {} hung up: {source}", socket.display())]
    HungUp {
        socket: PathBuf,
        source: std::io::Error,
    },
    #[error("the leanpool daemon at {} closed the connection without answering", socket.display())]
    NoAnswer { socket: PathBuf },
    #[error("the daemon's answer to `lease` is not a JSON-RPC answer: {0}")]
    NotJsonRpc(serde_json::Error),
    /// The daemon answered the lease with an error.
    #[error("the leanpool daemon refused the lease: {message} (code {code})")]
    Refused { message: String, code: ErrorCode },
    #[error("the daemon's answer to `lease` lacks uri/version/pid/header: {0}")]
    BadResult(serde_json::Error),
    #[error("the daemon's answer to `lease` has neither result nor error")]
    Empty,
}

/// Leases a worker for `text`'s imports from the daemon at `socket`, in
/// its project `project` (`None`: the daemon's first; waits while the
/// daemon starts one).
pub(crate) async fn lease(
    socket: &Path,
    project: Option<&str>,
    text: &str,
) -> Result<RemoteLease, LeaseError> {
    let stream = UnixStream::connect(socket)
        .await
        .map_err(|source| LeaseError::Connect {
            socket: socket.to_owned(),
            source,
        })?;
    let (rd, wr) = stream.into_split();
    let mut rd = BufReader::with_capacity(64 << 10, rd);
    let mut wr = BufWriter::new(wr);
    let r = ask_lease(&mut rd, &mut wr, socket, project, text).await?;
    let (in_tx, in_rx) = mpsc::unbounded_channel();
    let (out_tx, out_rx) = mpsc::unbounded_channel::<Value>();
    Ok(RemoteLease {
        uri: r.uri,
        version: r.version,
        pid: r.pid,
        header: r.header,
        rx: Some(in_rx),
        tx: out_tx,
        tasks: vec![
            tokio::spawn(read_lines(rd, in_tx)),
            tokio::spawn(write_lines(wr, out_rx)),
        ],
    })
}

/// Sends the `lease` request for `text`'s imports and reads the daemon's
/// answer: the leased worker's document, or why there is none.
async fn ask_lease(
    rd: &mut BufReader<OwnedReadHalf>,
    wr: &mut BufWriter<OwnedWriteHalf>,
    socket: &Path,
    project: Option<&str>,
    text: &str,
) -> Result<LeaseResult, LeaseError> {
    let header = leanpool_screen::header_key(text);
    let params = serde_json::to_value(LeaseParams {
        header,
        project: project.map(str::to_string),
    })
    .expect("serializable");
    let req = Request {
        jsonrpc: "2.0".into(),
        id: Id::Num(1),
        method: method::Lease::NAME.into(),
        params,
    };
    let mut line = serde_json::to_vec(&req).expect("serializable");
    line.push(b'\n');
    let io = |source: std::io::Error| LeaseError::HungUp {
        socket: socket.to_owned(),
        source,
    };
    wr.write_all(&line).await.map_err(io)?;
    wr.flush().await.map_err(io)?;
    let mut answer = String::new();
    if rd.read_line(&mut answer).await.map_err(io)? == 0 {
        return Err(LeaseError::NoAnswer {
            socket: socket.to_owned(),
        });
    }
    let answer: Response = serde_json::from_str(&answer).map_err(LeaseError::NotJsonRpc)?;
    if let Some(err) = answer.error {
        return Err(LeaseError::Refused {
            message: err.message,
            code: err.code,
        });
    }
    let r: <method::Lease as Method>::Result =
        match answer.result.map(serde_json::from_value::<LeaseResult>) {
            Some(Ok(r)) => r,
            Some(Err(e)) => return Err(LeaseError::BadResult(e)),
            None => return Err(LeaseError::Empty),
        };
    Ok(r)
}

/// The tunnel's reading half: each line from the daemon, as JSON, to `tx`
/// until the connection or the receiver ends.
async fn read_lines(mut rd: BufReader<OwnedReadHalf>, tx: mpsc::UnboundedSender<Value>) {
    let mut line = String::new();
    loop {
        line.clear();
        match rd.read_line(&mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => match serde_json::from_str::<Value>(&line) {
                Ok(v) => {
                    if tx.send(v).is_err() {
                        break;
                    }
                }
                Err(e) => tracing::warn!("a line from the daemon that is not JSON: {e}"),
            },
        }
    }
}

/// The tunnel's writing half: each message from `rx` as one line to the
/// daemon; closes its side when the senders are gone.
async fn write_lines(mut wr: BufWriter<OwnedWriteHalf>, mut rx: mpsc::UnboundedReceiver<Value>) {
    while let Some(v) = rx.recv().await {
        let mut line = serde_json::to_vec(&v).expect("serializable");
        line.push(b'\n');
        if wr.write_all(&line).await.is_err() {
            return;
        }
        if rx.is_empty() && wr.flush().await.is_err() {
            return;
        }
    }
    let _ = wr.shutdown().await;
}
