//! Messages from Lean to the lease holder, through the frame filter every
//! LSP path shares ([`crate::frames`]): answers only to requests this gate
//! sent, reports only on versions it sent; anything else is [`Forged`].

use super::rules::Issued;
use super::{Forged, FromLean, Gate};
use crate::frames::{self, classify, Frame, Report, Violation};
use leanpool_protocol::pending::Completion;
use serde_json::Value;

impl<W> Gate<W> {
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
}
