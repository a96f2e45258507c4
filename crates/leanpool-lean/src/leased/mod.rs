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

mod issued;
mod params;
pub mod rules;

use crate::frames::{self, classify, Frame, Report, Violation};
use issued::IssuedItems;
pub use issued::KEPT_ANSWERS;
use leanpool_protocol::lsp_error;
use leanpool_protocol::pending::{Completion, Pending};
use leanpool_screen::guard::{Rejection, Screened};
use rules::{request_rule, Issued, NOTIFICATIONS};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashSet};
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

/// Why a message from the holder was not passed to Lean.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// An [`lsp_error`] code.
    pub code: i64,
    /// What to do about it.
    pub message: String,
}

impl Refusal {
    fn new(code: i64, message: impl Into<String>) -> Self {
        Refusal {
            code,
            message: message.into(),
        }
    }

    /// Params outside their rule.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Refusal::new(lsp_error::INVALID_PARAMS, message)
    }

    /// The JSON-RPC error answer to the request `id`.
    pub fn answer(&self, id: Value) -> Value {
        json!({ "jsonrpc": "2.0", "id": id, "error": { "code": self.code, "message": self.message } })
    }
}

/// A frame from Lean that nobody asked for: what it was. The worker must
/// be killed (code in it may be forging output).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Forged(pub String);

/// Where a message from Lean goes (`W`: the owner's waiter of a request,
/// see [`Gate`]).
#[derive(Debug, PartialEq)]
pub enum FromLean<W = ()> {
    /// Lean's answer to one of the holder's requests, for its waiter; its
    /// `id` is the holder's own again, items' `data` are tokens.
    Answer(W, Value),
    /// To the holder (a notification, or a request of Lean's).
    Holder(Value),
    /// Back to Lean (the answer to a request of Lean's the holder does
    /// not see).
    Lean(Value),
    /// Nowhere (a late report of the pool's texts, an answer to a request
    /// the holder stopped waiting for, Lean's own bookkeeping).
    Drop,
}

/// A whole text the holder sent, checked but not yet screened.
#[derive(Debug)]
pub struct Edit {
    /// The holder's version.
    pub version: i64,
    /// The whole text.
    pub text: String,
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

    /// Checks a request and rebuilds its params by its rule: the params
    /// to send, or why not. No id is assigned ([`Gate::request`] does).
    pub fn check_request(&mut self, method: &str, params: &Value) -> Result<Value, Refusal> {
        let rule = request_rule(method).ok_or_else(|| {
            Refusal::new(
                lsp_error::METHOD_NOT_FOUND,
                format!(
                    "`{method}` is not served through a lease (docs/protocol.md lists what is)"
                ),
            )
        })?;
        if self.lines.is_empty() {
            return Err(Refusal::new(
                lsp_error::REQUEST_FAILED,
                "send the document's text first (a whole-text `textDocument/didChange`): until then the lease holds no text of yours",
            ));
        }
        if let Some(why) = &self.refused {
            return Err(Refusal::new(
                lsp_error::REQUEST_FAILED,
                format!(
                    "leanpool refused the document's current text, Lean has not seen it: {why}"
                ),
            ));
        }
        self.rebuild(rule, params)
    }

    /// A request of the holder's (`holder_id`, answered through `waiter`):
    /// the message to send to Lean (params rebuilt, id this gate's own), or
    /// the refusal.
    pub fn request(
        &mut self,
        holder_id: Value,
        waiter: W,
        method: &str,
        params: &Value,
        now: Instant,
    ) -> Result<Value, Refusal> {
        self.last_activity = now;
        let params = self.check_request(method, params)?;
        if self.pending.waiting() >= self.limits.max_pending {
            return Err(Refusal::new(
                lsp_error::OVERLOADED,
                format!(
                    "at most {} requests may be pending through a lease",
                    self.limits.max_pending
                ),
            ));
        }
        let id = self.pending.start(Asked {
            holder_id,
            waiter,
            method: method.to_string(),
            deadline: now + self.limits.request,
        });
        Ok(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
    }

    /// The request `id` could not be written to Lean: forget it.
    pub fn unsent(&mut self, msg: &Value) -> Option<W> {
        let id = msg["id"].as_i64()?;
        self.pending.forget(id).map(|a| a.waiter)
    }

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

    /// A notification of the holder's other than `didChange` (see
    /// [`Gate::edit`]): the message to send to Lean, if any.
    pub fn notification(
        &mut self,
        method: &str,
        p: &Value,
        now: Instant,
    ) -> Result<Option<Value>, Refusal> {
        self.last_activity = now;
        if !NOTIFICATIONS.contains(&method) || method == "textDocument/didChange" {
            return Err(Refusal::new(
                lsp_error::METHOD_NOT_FOUND,
                format!("`{method}` is not passed through a lease"),
            ));
        }
        let params = match method {
            "textDocument/didSave" => return Ok(None),
            "$/cancelRequest" => {
                let theirs = &p["id"];
                let ours = self.pending.iter().find(|(_, a)| a.holder_id == *theirs);
                let Some(id) = ours.map(|(id, _)| id) else {
                    return Ok(None);
                };
                // The holder answered its own request by cancelling it:
                // no other answer is owed.
                return Ok(self.cancel(id, now).map(|(msg, _)| msg));
            }
            _ => {
                // `$/lean/rpc/release` and `keepAlive`.
                self.own_uri(&p["uri"])?;
                let session = p["sessionId"]
                    .as_str()
                    .filter(|s| self.sessions.contains(*s))
                    .ok_or_else(|| {
                        Refusal::invalid_params(
                            "`sessionId` must be a session opened through this lease",
                        )
                    })?;
                let mut out = json!({ "uri": self.uri, "sessionId": session });
                if method == "$/lean/rpc/release" {
                    let refs: Vec<Value> = p["refs"]
                        .as_array()
                        .map(|a| {
                            a.iter()
                                .filter(|r| r["p"].is_string())
                                .map(|r| json!({ "p": r["p"] }))
                                .collect()
                        })
                        .unwrap_or_default();
                    out["refs"] = refs.into();
                }
                out
            }
        };
        Ok(Some(
            json!({ "jsonrpc": "2.0", "method": method, "params": params }),
        ))
    }

    /// A `textDocument/didChange` of the holder's: a newer version, one
    /// whole text, the imports the lease was granted for. The caller then
    /// screens the text and reports with [`Gate::accepted`] or
    /// [`Gate::rejected`].
    pub fn edit(&mut self, p: &Value, now: Instant) -> Result<Edit, Refusal> {
        self.last_activity = now;
        self.own_uri(&p["textDocument"]["uri"])?;
        let version = p["textDocument"]["version"]
            .as_i64()
            .ok_or_else(|| Refusal::invalid_params("`textDocument.version` must be an integer"))?;
        if version <= self.last_version {
            return Err(Refusal::invalid_params(format!(
                "version {version} is not newer than {}",
                self.last_version
            )));
        }
        let text =
            match p["contentChanges"].as_array().map(Vec::as_slice) {
                Some([c])
                    if c.get("range").is_none_or(Value::is_null)
                        && c.as_object()
                            .is_some_and(|o| o.keys().all(|k| k == "text" || k == "range")) =>
                {
                    c["text"]
                        .as_str()
                        .ok_or_else(|| Refusal::invalid_params("the change has no `text`"))?
                }
                _ => return Err(Refusal::invalid_params(
                    "a lease takes whole texts only: exactly one content change, without a range",
                )),
            };
        let imports = leanpool_screen::header_key(text);
        if imports != self.imports {
            return Err(Refusal::invalid_params(format!(
                "a leased text must keep the imports the lease was granted for ({:?}, this text has {imports:?}); lease again for other imports",
                self.imports
            )));
        }
        self.last_version = version;
        Ok(Edit {
            version,
            text: text.to_string(),
        })
    }

    /// The holder's text at `version` passed the guard: the text to send
    /// (with [`crate::RawSender::send_text`], to [`Gate::uri`] as
    /// `version`), the screened text and nothing else.
    pub fn accepted(
        &mut self,
        version: i64,
        screened: &Screened,
        now: Instant,
    ) -> leanpool_screen::guard::LeanText {
        self.sent_text(version, screened, now);
        screened.caller_lean_text()
    }

    /// The worker's document.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// Records that Lean's document is now `text` at `version`, for an
    /// owner that screens and sends texts itself (`leanpool lsp`, which
    /// applies an editor's incremental edits): positions are checked
    /// against it, requests may pass, Lean may report on `version`.
    pub fn sent_text(&mut self, version: i64, screened: &Screened, now: Instant) {
        self.last_activity = now;
        self.refused = None;
        let text = screened.caller_text();
        self.lines = text.split('\n').map(utf16_line_len).collect();
        self.sent.insert(version);
        self.last_version = self.last_version.max(version);
    }

    /// The guard refused the text: requests fail until a text is
    /// accepted. Returns leanpool's own diagnostic for the holder.
    pub fn rejected(&mut self, edit: &Edit, rej: &Rejection) -> Value {
        self.refused = Some(rej.to_string());
        let width = if rej.construct.contains('\n') {
            1
        } else {
            leanpool_screen::text::utf16_len(&rej.construct).max(1)
        };
        let range = json!({ "start": { "line": rej.line, "character": rej.character },
                            "end": { "line": rej.line, "character": rej.character + width } });
        let message = format!("leanpool refused this file; Lean has not seen it: {rej}");
        let diag =
            json!({ "range": range, "severity": 1, "source": "leanpool", "message": message });
        json!({ "jsonrpc": "2.0", "method": "textDocument/publishDiagnostics",
                "params": { "uri": self.uri, "version": edit.version, "diagnostics": [diag] } })
    }

    /// The holder answered one of Lean's requests: whether it may pass.
    pub fn holder_answer(&mut self, id: &Value) -> bool {
        self.server_requests.remove(&id.to_string())
    }

    /// Routes one message from Lean, through the frame filter every LSP
    /// path shares (`frames`): answers only to requests this gate sent,
    /// reports only on versions it sent (the worker's own opening versions
    /// dropped), Lean's refreshes to the holder (at most
    /// `max_server_requests` waiting; others answered `null` here).
    pub fn from_lean(&mut self, mut msg: Value) -> Result<FromLean<W>, Forged> {
        let forged = |v: Violation| Forged(v.to_string());
        let route = match classify(&msg).map_err(forged)? {
            Frame::Answer { id, .. } => match self.pending.complete(id) {
                Completion::Waiting(a) => Ok(a),
                Completion::Ignored => {
                    self.overdue.remove(&id);
                    return Ok(FromLean::Drop);
                }
                Completion::Unasked => return Err(forged(Violation::Unasked(id))),
            },
            Frame::Request { id, method } => {
                let refresh = method.starts_with("workspace/") && method.ends_with("/refresh");
                if refresh && self.server_requests.len() < self.limits.max_server_requests {
                    self.server_requests.insert(id.to_string());
                    return Ok(FromLean::Holder(msg));
                }
                return Ok(FromLean::Lean(crate::lsp::null_response(id)));
            }
            Frame::Notification { method, params } => Err(self.report(method, params)?),
        };
        match route {
            Ok(asked) => {
                if let Some(result) = msg.get_mut("result") {
                    self.rewrite_answer(&asked.method, result);
                }
                msg["id"] = asked.holder_id;
                Ok(FromLean::Answer(asked.waiter, msg))
            }
            Err(false) => Ok(FromLean::Drop),
            Err(true) => Ok(FromLean::Holder(msg)),
        }
    }

    /// Whether a notification of Lean's goes to the holder (`false`: the
    /// worker's opening versions, Lean's index notifications).
    fn report(&self, method: &str, params: &Value) -> Result<bool, Forged> {
        let newest = i32::try_from(self.last_version).unwrap_or(i32::MAX);
        let sent = |v: i32| v <= self.leased_version as i32 || self.sent.contains(&i64::from(v));
        let r = frames::report(method, params, &self.uri, sent, newest)
            .map_err(|v| Forged(v.to_string()))?;
        Ok(match r {
            Report::Ignored => false,
            Report::Progress(v) | Report::Diagnostics(v) => i64::from(v) > self.leased_version,
        })
    }

    /// Lean's answer to `method` as the holder gets it: items' `data`
    /// replaced by tokens, RPC sessions recorded.
    pub fn rewrite_answer(&mut self, method: &str, result: &mut Value) {
        match method {
            "textDocument/completion" => self.issued.issue(Issued::Completion, &self.uri, result),
            "textDocument/codeAction" => self.issued.issue(Issued::CodeAction, &self.uri, result),
            "$/lean/rpc/connect" => {
                if let Some(s) = result["sessionId"].as_str() {
                    if self.sessions.len() < self.limits.max_sessions {
                        self.sessions.insert(s.to_string());
                    }
                }
            }
            _ => {}
        }
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

fn utf16_line_len(line: &str) -> u32 {
    leanpool_screen::text::utf16_len(line.strip_suffix('\r').unwrap_or(line))
}

#[cfg(test)]
mod tests;
