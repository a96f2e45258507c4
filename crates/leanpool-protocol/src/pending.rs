//! The bookkeeping of requests sent on one connection and not yet
//! answered: request ids, who waits for which answer, and which answers
//! are still expected though nobody waits for them (the outgoing half of
//! `lsp-server`'s `ReqQueue`). The Rust client (`leanpool-rpc`) and the
//! Lean worker's LSP connection (`leanpool-lean`) both keep one. Plain
//! data, no channels: `W` is whatever the owner hands an answer to (a
//! `oneshot::Sender`).
//!
//! Rules kept here:
//!
//! * ids are `1, 2, 3, …` per map, never reused;
//! * an answer is taken at most once: a second answer to the same id is
//!   [`Completion::Unasked`], as is an answer to an id never started;
//! * a waiter that stops waiting either forgets its request (a later
//!   answer is unasked) or abandons it (exactly one later answer is
//!   [`Completion::Ignored`]);
//! * at most [`MAX_UNWAITED`] ids wait for an ignored answer: past that,
//!   the oldest is forgotten, so a connection that abandons many requests
//!   holds bounded memory (a very late answer to a forgotten id is then
//!   unasked: fail closed).
//!
//! ```
//! use leanpool_protocol::pending::{Completion, Pending};
//! let mut p = Pending::new();
//! let a = p.start("caller A");
//! let b = p.start("caller B");
//! assert_eq!((a, b), (1, 2));
//! assert_eq!(p.complete(b), Completion::Waiting("caller B"));
//! assert_eq!(p.complete(b), Completion::Unasked); // answered once only
//! p.abandon(a); // A stopped waiting; Lean may still answer once
//! assert_eq!(p.complete(a), Completion::Ignored);
//! assert_eq!(p.complete(a), Completion::Unasked);
//! ```

use std::collections::{BTreeSet, HashMap};

/// How many abandoned or unwaited ids a map remembers at most.
pub const MAX_UNWAITED: usize = 4096;

/// Requests sent and not yet answered; `W` receives an answer.
#[derive(Debug)]
pub struct Pending<W> {
    next_id: i64,
    waiting: HashMap<i64, W>,
    /// Ids whose one answer is accepted and ignored (ordered: ids grow,
    /// so the first is the oldest).
    unwaited: BTreeSet<i64>,
    max_unwaited: usize,
}

/// What an answer to an id is, for its map.
#[derive(Debug, PartialEq, Eq)]
pub enum Completion<W> {
    /// The waiter of that request: hand it the answer.
    Waiting(W),
    /// A request nobody waits for: accept the answer and drop it.
    Ignored,
    /// No request with that id expects an answer (never sent, already
    /// answered, or forgotten).
    Unasked,
}

impl<W> Default for Pending<W> {
    fn default() -> Self {
        Pending::new()
    }
}

impl<W> Pending<W> {
    /// An empty map whose first id is 1.
    pub fn new() -> Self {
        Pending::with_max_unwaited(MAX_UNWAITED)
    }

    /// An empty map that remembers at most `max` unwaited ids (at least 1).
    pub fn with_max_unwaited(max: usize) -> Self {
        Pending {
            next_id: 1,
            waiting: HashMap::new(),
            unwaited: BTreeSet::new(),
            max_unwaited: max.max(1),
        }
    }

    /// An empty map whose first id is `first` (e.g. far above the ids a
    /// connection used before it was handed over).
    pub fn starting_at(first: i64) -> Self {
        Pending {
            next_id: first,
            ..Pending::new()
        }
    }

    /// The requests someone waits for, with their waiters, in no
    /// particular order.
    pub fn iter(&self) -> impl Iterator<Item = (i64, &W)> + '_ {
        self.waiting.iter().map(|(&id, w)| (id, w))
    }

    fn next(&mut self) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// A new request whose answer goes to `waiter`; returns its id.
    pub fn start(&mut self, waiter: W) -> i64 {
        let id = self.next();
        self.waiting.insert(id, waiter);
        id
    }

    /// A new request nobody waits for (e.g. LSP `initialize` to a file
    /// worker, which may never answer): its one answer is ignored.
    pub fn start_unwaited(&mut self) -> i64 {
        let id = self.next();
        self.remember_unwaited(id);
        id
    }

    fn remember_unwaited(&mut self, id: i64) {
        self.unwaited.insert(id);
        while self.unwaited.len() > self.max_unwaited {
            self.unwaited.pop_first();
        }
    }

    /// Takes what an answer to `id` is for; the id expects no further
    /// answer afterwards.
    pub fn complete(&mut self, id: i64) -> Completion<W> {
        if let Some(w) = self.waiting.remove(&id) {
            Completion::Waiting(w)
        } else if self.unwaited.remove(&id) {
            Completion::Ignored
        } else {
            Completion::Unasked
        }
    }

    /// The waiter of `id` stopped waiting, but the peer may still answer:
    /// its one answer will be ignored. Returns the waiter, if `id` was
    /// waiting.
    pub fn abandon(&mut self, id: i64) -> Option<W> {
        let w = self.waiting.remove(&id)?;
        self.remember_unwaited(id);
        Some(w)
    }

    /// Drops the request `id` altogether: a later answer to it is
    /// unasked. Returns the waiter, if `id` was waiting.
    pub fn forget(&mut self, id: i64) -> Option<W> {
        self.unwaited.remove(&id);
        self.waiting.remove(&id)
    }

    /// Whether someone waits for the answer to `id`.
    pub fn is_waiting(&self, id: i64) -> bool {
        self.waiting.contains_key(&id)
    }

    /// How many requests someone waits for.
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// Removes every waiter (the connection is over), in no particular
    /// order; the ids expect no answer afterwards.
    pub fn drain(&mut self) -> impl Iterator<Item = W> + '_ {
        self.waiting.drain().map(|(_, w)| w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_count_up_across_waited_and_unwaited_requests() {
        let mut p = Pending::new();
        assert_eq!(p.start('a'), 1);
        assert_eq!(p.start_unwaited(), 2);
        assert_eq!(p.start('b'), 3);
        assert_eq!(p.complete(1), Completion::Waiting('a'));
        // An answered id is never handed out again.
        assert_eq!(p.start('c'), 4);
        assert_eq!(p.waiting(), 2);
    }

    #[test]
    fn each_answer_is_taken_once() {
        let mut p = Pending::new();
        let a = p.start("a");
        let u = p.start_unwaited();
        assert_eq!(p.complete(a), Completion::Waiting("a"));
        assert_eq!(p.complete(a), Completion::Unasked);
        assert_eq!(p.complete(u), Completion::Ignored);
        assert_eq!(p.complete(u), Completion::Unasked);
        assert_eq!(p.complete(99), Completion::Unasked);
        assert_eq!(p.complete(0), Completion::Unasked);
        assert_eq!(p.complete(-1), Completion::Unasked);
    }

    #[test]
    fn abandoned_requests_remap_to_one_ignored_answer() {
        let mut p = Pending::new();
        let a = p.start("a");
        assert!(p.is_waiting(a));
        assert_eq!(p.abandon(a), Some("a"));
        assert!(!p.is_waiting(a));
        // Abandoning twice (or an id never sent) changes nothing.
        assert_eq!(p.abandon(a), None);
        assert_eq!(p.abandon(77), None);
        assert_eq!(p.complete(77), Completion::Unasked);
        assert_eq!(p.complete(a), Completion::Ignored);
        assert_eq!(p.complete(a), Completion::Unasked);
    }

    #[test]
    fn forgotten_requests_expect_no_answer() {
        let mut p = Pending::new();
        let a = p.start("a");
        let u = p.start_unwaited();
        assert_eq!(p.forget(a), Some("a"));
        assert_eq!(p.forget(u), None);
        assert_eq!(p.complete(a), Completion::Unasked);
        assert_eq!(p.complete(u), Completion::Unasked);
    }

    #[test]
    fn unwaited_ids_are_capped_oldest_first() {
        let mut p = Pending::with_max_unwaited(3);
        let ids: Vec<i64> = (0..5).map(|_| p.start(())).collect();
        for &id in &ids {
            p.abandon(id);
        }
        // The two oldest were forgotten: their late answers are unasked.
        assert_eq!(p.complete(ids[0]), Completion::Unasked);
        assert_eq!(p.complete(ids[1]), Completion::Unasked);
        for &id in &ids[2..] {
            assert_eq!(p.complete(id), Completion::Ignored);
        }
        let mut p = Pending::<()>::with_max_unwaited(0);
        let a = p.start_unwaited();
        let b = p.start_unwaited();
        assert_eq!(p.complete(a), Completion::Unasked);
        assert_eq!(p.complete(b), Completion::Ignored);
        assert_eq!(Pending::<()>::new().max_unwaited, MAX_UNWAITED);
    }

    #[test]
    fn drain_empties_the_waiters() {
        let mut p = Pending::new();
        let a = p.start(1);
        p.start(2);
        let u = p.start_unwaited();
        let mut got: Vec<i32> = p.drain().collect();
        got.sort();
        assert_eq!(got, [1, 2]);
        assert_eq!(p.waiting(), 0);
        assert_eq!(p.complete(a), Completion::Unasked);
        // Unwaited ids are not waiters: a late answer is still accepted.
        assert_eq!(p.complete(u), Completion::Ignored);
    }
}
