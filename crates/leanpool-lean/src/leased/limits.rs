//! The lease's bounds in time: its caps ([`LeaseLimits`]), the
//! per-request time limit (a late request cancelled in Lean and answered
//! with an error; Lean not stopping within the grace ends the lease), the
//! idle limit, and the answers owed when the lease ends.

use super::{Gate, Refusal};
use leanpool_protocol::lsp_error;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// The caps on one lease (documented in docs/protocol.md, "lease").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseLimits {
    /// A request not answered within this is cancelled in Lean and
    /// answered `REQUEST_FAILED`.
    pub request: Duration,
    /// A cancelled request Lean has not answered this long after its
    /// limit ends the lease (the worker is killed: it is still computing).
    pub grace: Duration,
    /// A lease with no message from its holder and no request pending for
    /// this long ends.
    pub idle: Duration,
    /// CPU time the leased worker may use in all (checked by the owner,
    /// which can read the process's clock).
    pub cpu: Duration,
    /// Requests pending in Lean at once.
    pub max_pending: usize,
    /// Lean's own requests (refreshes) waiting for the holder's answer.
    pub max_server_requests: usize,
    /// RPC sessions open at once.
    pub max_sessions: usize,
}

impl LeaseLimits {
    /// How often a lease's owner (the daemon's tunnel, `leanpool lsp`'s
    /// document) checks these limits, the memory cap and the CPU budget.
    pub const POLL: Duration = Duration::from_millis(500);

    /// The defaults: 60 s per request (then 10 s grace), 30 min idle,
    /// 1 h of CPU, 256 pending requests, 64 of Lean's requests waiting,
    /// 64 RPC sessions.
    pub const DEFAULT: LeaseLimits = LeaseLimits {
        request: Duration::from_secs(60),
        grace: Duration::from_secs(10),
        idle: Duration::from_secs(30 * 60),
        cpu: Duration::from_secs(60 * 60),
        max_pending: 256,
        max_server_requests: 64,
        max_sessions: 64,
    };
}

impl Default for LeaseLimits {
    fn default() -> Self {
        LeaseLimits::DEFAULT
    }
}

/// What [`Gate::tick`] found overdue.
#[derive(Debug)]
pub struct Overdue<W = ()> {
    /// `$/cancelRequest`s for Lean.
    pub to_lean: Vec<Value>,
    /// Error answers for the holder, each with its request's waiter.
    pub to_holder: Vec<(W, Value)>,
    /// The lease must end, and why.
    pub end: Option<String>,
}

impl<W> Default for Overdue<W> {
    fn default() -> Self {
        Overdue {
            to_lean: Vec::new(),
            to_holder: Vec::new(),
            end: None,
        }
    }
}

impl<W> Gate<W> {
    /// The holder no longer waits for Lean's request `id` (it cancelled,
    /// or its limit passed): Lean's one answer will be dropped, and unless
    /// it comes within the grace the lease ends ([`Gate::tick`]). The
    /// `$/cancelRequest` to send to Lean, and the waiter.
    pub fn cancel(&mut self, id: i64, now: Instant) -> Option<(Value, W)> {
        let a = self.pending.abandon(id)?;
        self.overdue.insert(id, now + self.limits.grace);
        let msg = json!({ "jsonrpc": "2.0", "method": "$/cancelRequest", "params": { "id": id } });
        Some((msg, a.waiter))
    }

    /// Requests past their limit (cancelled in Lean, answered with an
    /// error), and whether the lease must end (Lean did not stop within
    /// the grace, or the holder has been idle past the limit).
    pub fn tick(&mut self, now: Instant) -> Overdue<W> {
        let mut out = Overdue::default();
        let late: Vec<i64> = self
            .pending
            .iter()
            .filter(|(_, a)| a.deadline <= now)
            .map(|(id, _)| id)
            .collect();
        for id in late {
            let Some((holder_id, method)) = self
                .pending
                .iter()
                .find(|(i, _)| *i == id)
                .map(|(_, a)| (a.holder_id.clone(), a.method.clone()))
            else {
                continue;
            };
            let Some((cancel, waiter)) = self.cancel(id, now) else {
                continue;
            };
            out.to_lean.push(cancel);
            let why = format!(
                "`{method}` took longer than the lease's limit of {} ms per request; Lean was asked to cancel it",
                self.limits.request.as_millis()
            );
            let answer = Refusal::new(lsp_error::REQUEST_FAILED, why).answer(holder_id);
            out.to_holder.push((waiter, answer));
        }
        if self.overdue.values().any(|&d| d <= now) {
            out.end = Some(format!(
                "a request went on in Lean {} s past its time limit after it was cancelled",
                self.limits.grace.as_secs()
            ));
        } else if self.pending.waiting() == 0
            && now.duration_since(self.last_activity) >= self.limits.idle
        {
            out.end = Some(format!(
                "no message for {} s (the lease's idle limit)",
                self.limits.idle.as_secs()
            ));
        }
        out
    }

    /// Everything pending ends with the lease: the error answers owed,
    /// each with its waiter.
    pub fn close(&mut self, why: &str) -> Vec<(W, Value)> {
        self.pending
            .drain()
            .map(|a| {
                let answer = Refusal::new(lsp_error::REQUEST_FAILED, why).answer(a.holder_id);
                (a.waiter, answer)
            })
            .collect()
    }
}
