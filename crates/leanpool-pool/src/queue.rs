//! The bounded FIFO of one header: many producers (callers), many
//! consumers (that header's worker slots).
//!
//! A tokio `mpsc` channel gives the bound and FIFO order; its single
//! receiver sits behind an async mutex so the header's idle slots take
//! turns waiting on it (the lock is per header, never global). `recv` is
//! cancel-safe, so a slot may stop waiting (eviction, health check) without
//! losing a job.

use crate::error::PoolError;
use tokio::sync::{mpsc, Mutex};

pub(crate) struct KeyQueue<T> {
    tx: mpsc::Sender<T>,
    rx: Mutex<mpsc::Receiver<T>>,
}

/// Why a push failed; the item comes back so it can be answered.
pub(crate) enum PushError<T> {
    Full(T, PoolError),
    Closed(T),
}

impl<T> KeyQueue<T> {
    pub(crate) fn new(limit: usize) -> Self {
        let (tx, rx) = mpsc::channel(limit.max(1));
        KeyQueue { tx, rx: Mutex::new(rx) }
    }

    /// Never waits: a full queue is an immediate `Overloaded`.
    pub(crate) fn try_push(&self, item: T) -> Result<(), PushError<T>> {
        self.tx.try_send(item).map_err(|e| match e {
            mpsc::error::TrySendError::Full(item) => {
                let limit = self.tx.max_capacity();
                PushError::Full(item, PoolError::Overloaded { queued: self.depth(), limit })
            }
            mpsc::error::TrySendError::Closed(item) => PushError::Closed(item),
        })
    }

    /// Items waiting.
    pub(crate) fn depth(&self) -> usize {
        self.tx.max_capacity() - self.tx.capacity()
    }

    /// Next item, waiting for one; `None` once closed and drained.
    pub(crate) async fn pop(&self) -> Option<T> {
        self.rx.lock().await.recv().await
    }

    /// Refuses further pushes and returns what was still waiting.
    pub(crate) async fn close_and_drain(&self) -> Vec<T> {
        let mut rx = self.rx.lock().await;
        rx.close();
        let mut out = Vec::new();
        while let Ok(item) = rx.try_recv() {
            out.push(item);
        }
        out
    }

    /// Takes everything waiting now without closing (used to answer the
    /// queue of a header whose worker cannot start).
    pub(crate) async fn drain_now(&self) -> Vec<T> {
        let mut rx = self.rx.lock().await;
        let mut out = Vec::new();
        while let Ok(item) = rx.try_recv() {
            out.push(item);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn bound_gives_overloaded_with_counts() {
        let q = KeyQueue::new(2);
        assert!(q.try_push(1).is_ok());
        assert!(q.try_push(2).is_ok());
        assert_eq!(q.depth(), 2);
        match q.try_push(3) {
            Err(PushError::Full(3, PoolError::Overloaded { queued: 2, limit: 2 })) => {}
            _ => panic!("expected Overloaded"),
        }
        assert_eq!(q.pop().await, Some(1));
        assert_eq!(q.depth(), 1);
        assert!(q.try_push(4).is_ok());
        assert_eq!(q.drain_now().await, vec![2, 4]);
    }

    #[tokio::test]
    async fn close_returns_leftovers_and_refuses_more() {
        let q = KeyQueue::new(4);
        q.try_push("a").ok().unwrap();
        assert_eq!(q.close_and_drain().await, vec!["a"]);
        assert!(matches!(q.try_push("b"), Err(PushError::Closed("b"))));
        assert_eq!(q.pop().await, None);
    }

    #[tokio::test]
    async fn abandoned_pop_loses_nothing() {
        let q = KeyQueue::new(4);
        // A waiter that gives up (as an idle slot does on a health tick).
        assert!(tokio::time::timeout(Duration::from_millis(10), q.pop()).await.is_err());
        q.try_push(7).ok().unwrap();
        assert_eq!(q.pop().await, Some(7));
    }
}
