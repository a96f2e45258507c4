//! Rebuilding a request's params by its [`Rule`]: only the fields the
//! rule names, each checked against what the lease holder owns.

use super::rules::{Rule, RPC_METHODS};
use super::{Gate, Refusal};
use serde_json::{json, Map, Value};

/// Code-action context diagnostics passed on at most.
const MAX_CONTEXT_DIAGNOSTICS: usize = 64;
/// `only` kinds of a code-action context passed on at most.
const MAX_ONLY_KINDS: usize = 16;

fn bad(why: impl Into<String>) -> Refusal {
    Refusal::invalid_params(why)
}

impl<W> Gate<W> {
    /// `params` rebuilt by `rule`, or why not.
    pub(super) fn rebuild(&mut self, rule: Rule, p: &Value) -> Result<Value, Refusal> {
        Ok(match rule {
            Rule::Doc => json!({ "textDocument": self.doc(p)? }),
            Rule::DocPosition => {
                json!({ "textDocument": self.doc(p)?, "position": self.position(&p["position"])? })
            }
            Rule::Completion => {
                let mut out = json!({ "textDocument": self.doc(p)?, "position": self.position(&p["position"])? });
                if let Some(ctx) = completion_context(&p["context"])? {
                    out["context"] = ctx;
                }
                out
            }
            Rule::DocRange => {
                json!({ "textDocument": self.doc(p)?, "range": self.range(&p["range"])? })
            }
            Rule::CodeAction => json!({
                "textDocument": self.doc(p)?,
                "range": self.range(&p["range"])?,
                "context": self.code_action_context(&p["context"])?,
            }),
            Rule::Resolve(kind) => self.issued.resolve(kind, &self.uri, p)?,
            Rule::WaitForDiagnostics => {
                self.own_uri(&p["uri"])?;
                let v = p["version"]
                    .as_i64()
                    .ok_or_else(|| bad("`version` must be an integer"))?;
                if !self.sent.contains(&v) {
                    return Err(bad(format!(
                        "version {v} is not a version this lease sent to Lean"
                    )));
                }
                json!({ "uri": self.uri, "version": v })
            }
            Rule::RpcConnect => {
                self.own_uri(&p["uri"])?;
                json!({ "uri": self.uri })
            }
            Rule::RpcCall => self.rpc_call(p)?,
        })
    }

    /// `{uri}` of the leased document from `textDocument`.
    fn doc(&self, p: &Value) -> Result<Value, Refusal> {
        self.own_uri(&p["textDocument"]["uri"])?;
        Ok(json!({ "uri": self.uri }))
    }

    pub(super) fn own_uri(&self, uri: &Value) -> Result<(), Refusal> {
        if uri.as_str() == Some(self.uri.as_str()) {
            Ok(())
        } else {
            Err(bad(format!(
                "requests through a lease must be about its document `{}`",
                self.uri
            )))
        }
    }

    /// A position inside the current text: line below the line count,
    /// character at most the line's UTF-16 length.
    pub(super) fn position(&self, v: &Value) -> Result<Value, Refusal> {
        let (line, ch) = match (v["line"].as_u64(), v["character"].as_u64()) {
            (Some(l), Some(c)) => (l, c),
            _ => {
                return Err(bad(
                    "`position` must have integer `line` and `character` (0-based, UTF-16)",
                ))
            }
        };
        let len = usize::try_from(line)
            .ok()
            .and_then(|l| self.lines.get(l))
            .ok_or_else(|| {
                bad(format!(
                    "line {line} is outside the document ({} lines)",
                    self.lines.len()
                ))
            })?;
        if ch > u64::from(*len) {
            return Err(bad(format!(
                "character {ch} is past the end of line {line} ({len} UTF-16 units)"
            )));
        }
        Ok(json!({ "line": line, "character": ch }))
    }

    fn range(&self, v: &Value) -> Result<Value, Refusal> {
        let start = self.position(&v["start"])?;
        let end = self.position(&v["end"])?;
        let key = |p: &Value| (p["line"].as_u64(), p["character"].as_u64());
        if key(&end) < key(&start) {
            return Err(bad("`range` ends before it starts"));
        }
        Ok(json!({ "start": start, "end": end }))
    }

    fn code_action_context(&self, v: &Value) -> Result<Value, Refusal> {
        let mut diags = Vec::new();
        if let Some(a) = v["diagnostics"].as_array() {
            for d in a.iter().take(MAX_CONTEXT_DIAGNOSTICS) {
                let mut out = json!({ "range": self.range(&d["range"])? });
                out["message"] = Value::String(d["message"].as_str().unwrap_or("").to_string());
                if let Some(s) = d["severity"].as_u64().filter(|s| (1..=4).contains(s)) {
                    out["severity"] = s.into();
                }
                diags.push(out);
            }
        }
        let mut out = json!({ "diagnostics": diags });
        if let Some(a) = v["only"].as_array() {
            let kinds: Vec<Value> = a
                .iter()
                .filter_map(Value::as_str)
                .filter(|k| k.len() <= 64)
                .take(MAX_ONLY_KINDS)
                .map(Value::from)
                .collect();
            out["only"] = kinds.into();
        }
        if let Some(k) = v["triggerKind"].as_u64().filter(|k| (1..=2).contains(k)) {
            out["triggerKind"] = k.into();
        }
        Ok(out)
    }

    fn rpc_call(&self, p: &Value) -> Result<Value, Refusal> {
        let doc = self.doc(p)?;
        let position = self.position(&p["position"])?;
        let session = p["sessionId"]
            .as_str()
            .filter(|s| self.sessions.contains(*s))
            .ok_or_else(|| {
                bad("`sessionId` must be a session `$/lean/rpc/connect` opened through this lease")
            })?;
        let method = p["method"]
            .as_str()
            .filter(|m| RPC_METHODS.contains(m))
            .ok_or_else(|| {
                bad(format!(
                    "`method` must be one of Lean's own RPC procedures: {}",
                    RPC_METHODS.join(", ")
                ))
            })?;
        let mut params = p.get("params").cloned().unwrap_or(Value::Null);
        if let Value::Object(o) = &mut params {
            self.rpc_params(o)?;
        }
        Ok(json!({
            "textDocument": doc, "position": position, "sessionId": session,
            "method": method, "params": params,
        }))
    }

    /// An RPC call's own params may name the document (goal requests) or
    /// lines (`getInteractiveDiagnostics`): the same rules apply.
    fn rpc_params(&self, o: &mut Map<String, Value>) -> Result<(), Refusal> {
        if let Some(td) = o.get("textDocument") {
            self.own_uri(&td["uri"])?;
        }
        if let Some(pos) = o.get("position") {
            let p = self.position(pos)?;
            o.insert("position".into(), p);
        }
        if let Some(r) = o.get("lineRange").filter(|r| !r.is_null()) {
            let lines = self.lines.len() as u64 + 1;
            let (s, e) = (r["start"].as_u64(), r["end"].as_u64());
            match (s, e) {
                (Some(s), Some(e)) if s <= e && e <= lines => {
                    o.insert("lineRange".into(), json!({ "start": s, "end": e }));
                }
                _ => {
                    return Err(bad(format!(
                        "`lineRange` must be integer lines with start <= end <= {lines}"
                    )))
                }
            }
        }
        Ok(())
    }
}

fn completion_context(v: &Value) -> Result<Option<Value>, Refusal> {
    if v.is_null() {
        return Ok(None);
    }
    let kind = v["triggerKind"]
        .as_u64()
        .filter(|k| (1..=3).contains(k))
        .ok_or_else(|| bad("completion `context.triggerKind` must be 1, 2 or 3"))?;
    let mut out = json!({ "triggerKind": kind });
    if let Some(c) = v["triggerCharacter"].as_str() {
        if c.chars().count() != 1 {
            return Err(bad("`context.triggerCharacter` must be one character"));
        }
        out["triggerCharacter"] = c.into();
    }
    Ok(Some(out))
}
