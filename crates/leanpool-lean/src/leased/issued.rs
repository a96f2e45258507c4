//! `data` that Lean issued through a lease, and only that, comes back to
//! it: completion items and code actions in Lean's answers are kept here
//! and their `data` replaced by a leanpool token (`{"uri", "leanpool"}`);
//! a resolve request is answered for the item its token names, sent to
//! Lean exactly as Lean issued it. A caller's own `data` (e.g. a
//! `providerName` naming a declaration of its document, which
//! `codeAction/resolve` would run) never reaches Lean.

use super::rules::Issued;
use super::Refusal;
use serde_json::{json, Value};
use std::collections::VecDeque;

/// Answers whose items stay resolvable (older ones' tokens are refused:
/// bounded memory, failing closed).
pub const KEPT_ANSWERS: usize = 16;

/// Items of the last [`KEPT_ANSWERS`] completion / code-action answers.
#[derive(Debug, Default)]
pub(super) struct IssuedItems {
    next: u64,
    answers: VecDeque<(u64, Issued, Vec<Value>)>,
}

impl IssuedItems {
    /// Keeps the items of one of Lean's answers (`kind`'s request) and
    /// gives each a token in place of its `data`.
    pub fn issue(&mut self, kind: Issued, uri: &str, result: &mut Value) {
        let list = match (kind, result) {
            (Issued::Completion, Value::Object(o)) => o.get_mut("items"),
            (_, v @ Value::Array(_)) => Some(v),
            _ => None,
        };
        let Some(Value::Array(items)) = list else {
            return;
        };
        let n = self.next;
        self.next += 1;
        let mut kept = Vec::new();
        for item in items.iter_mut().filter(|i| i.get("data").is_some()) {
            let token = format!("{n}.{}", kept.len());
            kept.push(item.clone());
            item["data"] = json!({ "uri": uri, "leanpool": token });
        }
        if kept.is_empty() {
            return;
        }
        self.answers.push_back((n, kind, kept));
        while self.answers.len() > KEPT_ANSWERS {
            self.answers.pop_front();
        }
    }

    /// The item a resolve request's token names, as Lean issued it.
    pub fn resolve(&self, kind: Issued, uri: &str, p: &Value) -> Result<Value, Refusal> {
        let data = &p["data"];
        let token = data["leanpool"].as_str().filter(|_| data["uri"] == uri);
        let found = token.and_then(|t| {
            let (a, i) = t.split_once('.')?;
            let (a, i): (u64, usize) = (a.parse().ok()?, i.parse().ok()?);
            let (_, k, items) = self.answers.iter().find(|(n, _, _)| *n == a)?;
            (*k == kind).then(|| items.get(i).cloned()).flatten()
        });
        found.ok_or_else(|| {
            Refusal::invalid_params(format!(
                "`data` must be the token leanpool put into an item of one of the last {KEPT_ANSWERS} `{}` answers of this lease; ask for them again",
                kind.source_method()
            ))
        })
    }
}
