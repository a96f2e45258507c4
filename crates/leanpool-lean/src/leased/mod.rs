//! The one trust filter between a lease holder (the daemon's `lease`
//! tunnel, `leanpool lsp`'s documents) and a leased worker's Lean: a
//! [`Gate`] per leased worker, with no I/O (its owner moves the messages
//! and reads the clock; as rust-analyzer's `lsp-server` keeps the
//! `Connection` apart from its request queue).
//!
//! Rules (issue 26), each refused with a reason and an LSP error code
//! ([`leanpool_protocol::lsp_error`]):
//!
//! * **Clean start**: no request passes before the holder's first text;
//!   after it, Lean's document holds only texts the holder wrote (the
//!   pool leases pristine workers only, `leanpool_pool::Pool::lease`).
//! * **Allowlist of methods and parameters** ([`rules`]): params are
//!   rebuilt field by field ([`rules::Rule`]); resolve requests carry only
//!   items Lean issued through this lease; RPC calls only Lean's own
//!   procedures on sessions opened through it.
//! * **Bounds** ([`LeaseLimits`]): positions inside the text, pending
//!   requests, a time limit per request (then `$/cancelRequest` and an
//!   error to the holder; Lean not answering within the grace ends the
//!   lease), an idle limit; a text may not change the imports the lease
//!   was granted for.
//! * **From Lean** only answers to requests this gate sent, diagnostics
//!   and progress for versions it sent: anything else is [`Forged`].
//!
//! One file per side: `holder.rs` (the holder's messages), `lean.rs`
//! (Lean's), `limits.rs` (caps and time), `messages.rs` (what the gate
//! answers), `params.rs` (params rebuilt), `issued.rs` (Lean's `data`
//! kept behind tokens), `rules.rs` (the allowlist).

mod holder;
mod issued;
mod lean;
mod limits;
mod messages;
mod params;
pub mod rules;

use issued::IssuedItems;
pub use issued::KEPT_ANSWERS;
use leanpool_protocol::pending::Pending;
pub use limits::{LeaseLimits, Overdue};
pub use messages::{Edit, Forged, FromLean, Refusal};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::time::Instant;

/// A request sent to Lean for the holder.
#[derive(Debug)]
struct Asked<W> {
    holder_id: Value,
    waiter: W,
    method: String,
    deadline: Instant,
}

/// The filter of one leased worker, and its one request-id map: `W` is
/// what its owner keeps per request (nothing for the daemon's tunnel,
/// which answers by the holder's id; the way back to a waiting editor
/// request for `leanpool lsp`).
#[derive(Debug)]
pub struct Gate<W = ()> {
    uri: String,
    imports: String,
    limits: LeaseLimits,
    /// UTF-16 length of each line of the newest text sent; empty before
    /// the holder's first text.
    lines: Vec<u32>,
    /// Versions sent to Lean (the only ones Lean may report on).
    sent: BTreeSet<i64>,
    last_version: i64,
    leased_version: i64,
    refused: Option<String>,
    pending: Pending<Asked<W>>,
    /// Requests past their limit, cancelled in Lean: when the lease ends
    /// unless Lean has answered.
    overdue: BTreeMap<i64, Instant>,
    server_requests: HashSet<String>,
    sessions: HashSet<String>,
    issued: IssuedItems,
    last_activity: Instant,
}

/// Ids of requests to Lean: far above those the worker's driver used.
const FIRST_ID: i64 = 1 << 40;

impl<W> Gate<W> {
    /// A gate for the worker document `uri` at `leased_version`, opened
    /// on `imports` (the canonical header key).
    pub fn new(
        uri: &str,
        imports: &str,
        leased_version: i64,
        limits: LeaseLimits,
        now: Instant,
    ) -> Gate<W> {
        Gate {
            uri: uri.to_string(),
            imports: imports.to_string(),
            limits,
            lines: Vec::new(),
            sent: BTreeSet::new(),
            last_version: leased_version,
            leased_version,
            refused: None,
            pending: Pending::starting_at(FIRST_ID),
            overdue: BTreeMap::new(),
            server_requests: HashSet::new(),
            sessions: HashSet::new(),
            issued: IssuedItems::default(),
            last_activity: now,
        }
    }

    /// The caps this gate applies.
    pub fn limits(&self) -> &LeaseLimits {
        &self.limits
    }

    /// The worker's document.
    pub fn uri(&self) -> &str {
        &self.uri
    }
}

#[cfg(test)]
mod tests;
