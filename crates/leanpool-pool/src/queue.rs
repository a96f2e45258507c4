//! The bounded FIFO of one header: many producers (callers), many
//! consumers (that header's worker slots).
//!
//! A tokio `mpsc` channel gives the bound and FIFO order; its single
//! receiver sits behind an async mutex so the header's idle slots take
//! turns waiting on it (the lock is per header, never global). `recv` is
//! cancel-safe, so a slot may stop waiting (eviction, health check) without
//! losing a job.
//!
//! A second, unbounded lane holds requests to run again after their worker
//! died: they were accepted already (the bound does not apply) and are
//! taken before anything in the FIFO.

use crate::error::PoolError;
use std::collections::VecDeque;
use tokio::sync::{mpsc, Mutex, Notify};

pub(crate) struct KeyQueue<T> {
    tx: mpsc::Sender<T>,
    rx: Mutex<mpsc::Receiver<T>>,
    /// (closed, items) of the retry lane.
    retry: std::sync::Mutex<(bool, VecDeque<T>)>,
    retry_added: Notify,
}

/// Why a push failed; the item comes back so it can be answered.
pub(crate) enum PushError<T> {
    Full(T, PoolError),
    Closed(T),
}

impl<T> KeyQueue<T> {
    pub(crate) fn new(limit: usize) -> Self {
        let (tx, rx) = mpsc::channel(limit.max(1));
        KeyQueue {
            tx,
            rx: Mutex::new(rx),
            retry: std::sync::Mutex::new((false, VecDeque::new())),
            retry_added: Notify::new(),
        }
    }

    /// Puts an accepted item back, ahead of everything waiting; refused
    /// (item returned) once the queue is closed.
    pub(crate) fn push_retry(&self, item: T) -> Result<(), T> {
        let mut r = self.retry.lock().unwrap();
        if r.0 {
            return Err(item);
        }
        r.1.push_back(item);
        drop(r);
        self.retry_added.notify_one();
        Ok(())
    }

    fn take_retry(&self) -> Option<T> {
        self.retry.lock().unwrap().1.pop_front()
    }

    /// Never waits: a full queue is an immediate `Overloaded`.
    pub(crate) fn try_push(&self, item: T) -> Result<(), PushError<T>> {
        self.tx.try_send(item).map_err(|e| match e {
            mpsc::error::TrySendError::Full(item) => {
                let limit = self.tx.max_capacity();
                PushError::Full(
                    item,
                    PoolError::Overloaded {
                        queued: self.depth(),
                        limit,
                    },
                )
            }
            mpsc::error::TrySendError::Closed(item) => PushError::Closed(item),
        })
    }

    /// Items waiting (retry lane included).
    pub(crate) fn depth(&self) -> usize {
        self.tx.max_capacity() - self.tx.capacity() + self.retry.lock().unwrap().1.len()
    }

    /// Next item, retries first, waiting for one; `None` once closed and
    /// drained.
    pub(crate) async fn pop(&self) -> Option<T> {
        let mut rx = self.rx.lock().await;
        loop {
            if let Some(item) = self.take_retry() {
                return Some(item);
            }
            // Only the holder of `rx` waits here, so a `notify_one` permit
            // stored meanwhile is this waiter's.
            tokio::select! {
                biased;
                _ = self.retry_added.notified() => continue,
                r = rx.recv() => return r,
            }
        }
    }

    /// Refuses further pushes and returns what was still waiting.
    pub(crate) async fn close_and_drain(&self) -> Vec<T> {
        let mut rx = self.rx.lock().await;
        rx.close();
        let mut out: Vec<T> = {
            let mut r = self.retry.lock().unwrap();
            r.0 = true;
            r.1.drain(..).collect()
        };
        while let Ok(item) = rx.try_recv() {
            out.push(item);
        }
        out
    }

    /// Takes everything waiting now without closing (used to answer the
    /// queue of a header whose worker cannot start).
    pub(crate) async fn drain_now(&self) -> Vec<T> {
        let mut rx = self.rx.lock().await;
        let mut out: Vec<T> = self.retry.lock().unwrap().1.drain(..).collect();
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
            Err(PushError::Full(
                3,
                PoolError::Overloaded {
                    queued: 2,
                    limit: 2,
                },
            )) => {}
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
        assert!(tokio::time::timeout(Duration::from_millis(10), q.pop())
            .await
            .is_err());
        q.try_push(7).ok().unwrap();
        assert_eq!(q.pop().await, Some(7));
    }

    #[tokio::test]
    async fn retries_go_first_bypass_the_bound_and_close() {
        let q = KeyQueue::new(1);
        q.try_push(1).ok().unwrap();
        assert!(q.push_retry(9).is_ok());
        assert_eq!(q.depth(), 2);
        assert_eq!(q.pop().await, Some(9));
        assert_eq!(q.pop().await, Some(1));
        // A retry wakes a waiter already blocked on the FIFO.
        let q = std::sync::Arc::new(KeyQueue::new(1));
        let waiter = tokio::spawn({
            let q = q.clone();
            async move { q.pop().await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        q.push_retry(5).unwrap();
        assert_eq!(
            tokio::time::timeout(Duration::from_secs(5), waiter)
                .await
                .unwrap()
                .unwrap(),
            Some(5)
        );
        q.push_retry(6).unwrap();
        assert_eq!(q.close_and_drain().await, vec![6]);
        assert_eq!(q.push_retry(7), Err(7));
    }
}
