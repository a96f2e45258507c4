//! Messages from the lease holder to Lean: requests checked against the
//! allowlist and rebuilt by their rule ([`super::rules`]), notifications,
//! whole texts (a newer version, the imports the lease was granted for;
//! then screened by the owner), answers to Lean's own requests.

use super::rules::{request_rule, NOTIFICATIONS};
use super::{Asked, Edit, Gate, Refusal};
use leanpool_protocol::lsp_error;
use leanpool_screen::guard::{LeanText, Rejection, Screened};
use serde_json::{json, Value};
use std::time::Instant;

impl<W> Gate<W> {
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
        self.same_imports(&leanpool_screen::header_key(text))?;
        self.last_version = version;
        Ok(Edit {
            version,
            text: text.to_string(),
        })
    }

    /// The holder's text at `version` passed the guard: the text to send
    /// (with [`crate::RawSender::send_text`], to [`Gate::uri`] as
    /// `version`), the screened text and nothing else. Refused when its
    /// imports are not the ones the lease was granted for: checked here
    /// for every owner (the daemon's tunnel after [`Gate::edit`];
    /// `leanpool lsp`, which applies an editor's incremental edits and
    /// screens the text itself). From then on positions are checked
    /// against this text, requests may pass, Lean may report on `version`.
    pub fn accepted(
        &mut self,
        version: i64,
        screened: &Screened,
        now: Instant,
    ) -> Result<LeanText, Refusal> {
        self.last_activity = now;
        if let Err(r) = self.same_imports(screened.header()) {
            self.refused = Some(r.message.clone());
            return Err(r);
        }
        self.refused = None;
        self.lines = screened
            .caller_text()
            .split('\n')
            .map(utf16_line_len)
            .collect();
        self.sent.insert(version);
        self.last_version = self.last_version.max(version);
        Ok(screened.caller_lean_text())
    }

    /// A leased text keeps the imports the lease was granted for.
    fn same_imports(&self, imports: &str) -> Result<(), Refusal> {
        if imports == self.imports {
            return Ok(());
        }
        Err(Refusal::invalid_params(format!(
            "a leased text must keep the imports the lease was granted for ({:?}, this text has {imports:?}); lease again for other imports (an editor: close and re-open the file)",
            self.imports
        )))
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
}

fn utf16_line_len(line: &str) -> u32 {
    leanpool_screen::text::utf16_len(line.strip_suffix('\r').unwrap_or(line))
}
