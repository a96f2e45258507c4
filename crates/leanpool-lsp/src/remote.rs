//! Workers leased from a running daemon (`leanpool lsp --socket`): one
//! connection per document, which after the daemon's `lease` answer
//! carries the worker's LSP messages, one JSON object per line each way
//! (docs/protocol.md, "lease"). The daemon guards the tunnel itself; it
//! takes whole texts only, so every edit goes out as the full text.

use leanpool_protocol::method::{self, Method};
use leanpool_protocol::{Id, LeaseParams, LeaseResult, Request, Response};
use serde_json::Value;
use std::path::Path;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, BufWriter};
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

/// Leases a worker for `text`'s imports from the daemon at `socket`
/// (waits while the daemon starts one).
pub(crate) async fn lease(socket: &Path, text: &str) -> Result<RemoteLease, String> {
    let stream = UnixStream::connect(socket)
        .await
        .map_err(|e| format!("cannot connect to the leanpool daemon at {}: {e}", socket.display()))?;
    let (rd, wr) = stream.into_split();
    let mut rd = BufReader::with_capacity(64 << 10, rd);
    let mut wr = BufWriter::new(wr);
    let header = leanpool_lean::header_key(text);
    let params = LeaseParams { header };
    let req = Request {
        jsonrpc: "2.0".into(),
        id: Id::Num(1),
        method: method::Lease::NAME.into(),
        params: serde_json::to_value(params).expect("serializable"),
    };
    let mut line = serde_json::to_vec(&req).expect("serializable");
    line.push(b'\n');
    let io = |e: std::io::Error| format!("the leanpool daemon at {} hung up: {e}", socket.display());
    wr.write_all(&line).await.map_err(io)?;
    wr.flush().await.map_err(io)?;
    let mut answer = String::new();
    if rd.read_line(&mut answer).await.map_err(io)? == 0 {
        return Err(format!("the leanpool daemon at {} closed the connection without answering", socket.display()));
    }
    let answer: Response =
        serde_json::from_str(&answer).map_err(|e| format!("the daemon's answer to `lease` is not a JSON-RPC answer: {e}"))?;
    if let Some(err) = answer.error {
        return Err(format!("the leanpool daemon refused the lease: {} (code {})", err.message, err.code));
    }
    let r: <method::Lease as Method>::Result = match answer.result.map(serde_json::from_value::<LeaseResult>) {
        Some(Ok(r)) => r,
        Some(Err(e)) => return Err(format!("the daemon's answer to `lease` lacks uri/version/pid/header: {e}")),
        None => return Err("the daemon's answer to `lease` has neither result nor error".into()),
    };
    let (in_tx, in_rx) = mpsc::unbounded_channel();
    let (out_tx, mut out_rx) = mpsc::unbounded_channel::<Value>();
    let reader = tokio::spawn(async move {
        let mut line = String::new();
        loop {
            line.clear();
            match rd.read_line(&mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => match serde_json::from_str::<Value>(&line) {
                    Ok(v) => {
                        if in_tx.send(v).is_err() {
                            break;
                        }
                    }
                    Err(e) => tracing::warn!("a line from the daemon that is not JSON: {e}"),
                },
            }
        }
    });
    let writer = tokio::spawn(async move {
        while let Some(v) = out_rx.recv().await {
            let mut line = serde_json::to_vec(&v).expect("serializable");
            line.push(b'\n');
            if wr.write_all(&line).await.is_err() {
                return;
            }
            if out_rx.is_empty() && wr.flush().await.is_err() {
                return;
            }
        }
        let _ = wr.shutdown().await;
    });
    Ok(RemoteLease {
        uri: r.uri,
        version: r.version,
        pid: r.pid,
        header: r.header,
        rx: Some(in_rx),
        tx: out_tx,
        tasks: vec![reader, writer],
    })
}
