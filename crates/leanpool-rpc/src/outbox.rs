//! A connection's way out: request tasks (and a tunnel) queue answer lines
//! on an [`Outbox`]; one writer task writes them in order. The bytes queued
//! and not yet written are counted, so the server can stop reading a
//! connection whose client does not read its answers.

use std::sync::Arc;
use tokio::io::{AsyncWriteExt, BufWriter};
use tokio::sync::{mpsc, watch, Notify};

/// Lines queued to the writer before `send_line` waits.
const QUEUE: usize = 1024;

/// The way from request tasks (and a tunnel) to the writer: each line's
/// bytes are counted as unsent until the writer has written them.
#[derive(Clone)]
pub(crate) struct Outbox {
    tx: mpsc::Sender<Vec<u8>>,
    unsent: Arc<watch::Sender<usize>>,
}

impl Outbox {
    /// The outbox of the connection writing to `wr`, and its writer task,
    /// which notifies `gone` when a write fails (the client is gone).
    pub(crate) fn start(
        wr: tokio::net::unix::OwnedWriteHalf,
        gone: Arc<Notify>,
    ) -> (Outbox, tokio::task::JoinHandle<()>) {
        let (tx, rx) = mpsc::channel::<Vec<u8>>(QUEUE);
        let unsent = Arc::new(watch::channel(0usize).0);
        let writer = tokio::spawn(write_loop(wr, rx, unsent.clone(), gone));
        (Outbox { tx, unsent }, writer)
    }

    /// Queues one line (ending in `\n`). `Err` when the writer is gone.
    pub(crate) async fn send_line(&self, line: Vec<u8>) -> Result<(), ()> {
        let n = line.len();
        self.unsent.send_modify(|u| *u += n);
        if self.tx.send(line).await.is_err() {
            self.unsent.send_modify(|u| *u -= n);
            return Err(());
        }
        Ok(())
    }

    /// Bytes queued and not yet written.
    pub(crate) fn unsent(&self) -> usize {
        *self.unsent.borrow()
    }

    /// Watches the bytes queued and not yet written.
    pub(crate) fn subscribe_unsent(&self) -> watch::Receiver<usize> {
        self.unsent.subscribe()
    }
}

/// Writes answers as they come, one JSON object per line, flushing when no
/// more are queued. A write error means the client is gone.
async fn write_loop(
    wr: tokio::net::unix::OwnedWriteHalf,
    mut rx: mpsc::Receiver<Vec<u8>>,
    unsent: Arc<watch::Sender<usize>>,
    gone: Arc<Notify>,
) {
    let mut w = BufWriter::with_capacity(64 << 10, wr);
    while let Some(first) = rx.recv().await {
        let mut next = Some(first);
        let mut ok = true;
        while let Some(line) = next {
            let r = w.write_all(&line).await;
            unsent.send_modify(|u| *u -= line.len());
            if r.is_err() {
                ok = false;
                break;
            }
            next = rx.try_recv().ok();
        }
        if !ok || w.flush().await.is_err() {
            gone.notify_one();
            return;
        }
    }
    let _ = w.shutdown().await;
}
