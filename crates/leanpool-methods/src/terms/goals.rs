//! `Lean.Widget.getInteractiveGoals` answers and interactive messages.
//!
//! Shapes (Lean's RPC encoding): `{"goals": [{"hyps": [{"names": [..],
//! "fvarIds": [..], "type": <CodeWithInfos>, "val"?: …, "isInstance": b,
//! "isType": b}, …], "type": <CodeWithInfos>, "userName"?: …,
//! "goalPrefix": "⊢ ", "mvarId": …, "ctx": …}]}`; `null` when there is no
//! goal at the position. Interactive diagnostics:
//! `[{"range": …, "fullRange"?: …, "severity": n, "message": <TaggedText
//! MsgEmbed>}]`, where an `expr` embed is `{"tag": [{"expr": <CodeWithInfos>}, …]}`.

use crate::terms::tagged::{ShapeError, Tagged};
use serde_json::Value;

/// One hypothesis of a goal, with its bundle expanded to one name.
#[derive(Debug, Clone, PartialEq)]
pub struct Hyp {
    /// The hypothesis' user name.
    pub name: String,
    /// Lean's free-variable id, when given.
    pub fvar_id: Option<String>,
    /// Its type, as tagged text.
    pub ty: Tagged,
    /// Whether it is an instance binder.
    pub is_instance: bool,
    /// Whether it is a type (Lean's `isType`).
    pub is_type: bool,
    /// Index of the bundle it came from (`a b : Nat` is one bundle).
    pub bundle: usize,
}

/// One goal: its hypotheses and target.
#[derive(Debug, Clone, PartialEq)]
pub struct Goal {
    /// The hypotheses, one per name.
    pub hyps: Vec<Hyp>,
    /// The target, as tagged text.
    pub target: Tagged,
}

fn err(s: &str) -> ShapeError {
    ShapeError(s.to_owned())
}

/// The first goal of a `getInteractiveGoals` answer (`None`: no goal).
pub fn parse_first_goal(v: &Value) -> Result<Option<Goal>, ShapeError> {
    if v.is_null() {
        return Ok(None);
    }
    let goals = v
        .get("goals")
        .and_then(Value::as_array)
        .ok_or_else(|| err("no `goals` array"))?;
    let Some(g) = goals.first() else {
        return Ok(None);
    };
    let target = Tagged::parse(g.get("type").ok_or_else(|| err("goal without `type`"))?)?;
    let mut hyps = Vec::new();
    for (bundle, h) in g
        .get("hyps")
        .and_then(Value::as_array)
        .ok_or_else(|| err("goal without `hyps`"))?
        .iter()
        .enumerate()
    {
        let names = h
            .get("names")
            .and_then(Value::as_array)
            .ok_or_else(|| err("hyp without `names`"))?;
        let fvars = h.get("fvarIds").and_then(Value::as_array);
        let ty = Tagged::parse(h.get("type").ok_or_else(|| err("hyp without `type`"))?)?;
        let flag = |k: &str| h.get(k).and_then(Value::as_bool).unwrap_or(false);
        for (i, n) in names.iter().enumerate() {
            hyps.push(Hyp {
                name: n
                    .as_str()
                    .ok_or_else(|| err("hyp name is not a string"))?
                    .to_owned(),
                fvar_id: fvars
                    .and_then(|f| f.get(i))
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                ty: ty.clone(),
                is_instance: flag("isInstance"),
                is_type: flag("isType"),
                bundle,
            });
        }
    }
    Ok(Some(Goal { hyps, target }))
}

/// The `expr` embeds of an interactive message, in order.
pub fn message_exprs(msg: &Tagged) -> Result<Vec<Tagged>, ShapeError> {
    let mut out = Vec::new();
    let mut bad = None;
    msg.visit_tags(&mut |payload, _| {
        if let Some(e) = payload.get("expr") {
            match Tagged::parse(e) {
                Ok(t) => out.push(t),
                Err(e) => bad = Some(e),
            }
        }
    });
    match bad {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// One interactive diagnostic: its 0-based start line and message.
#[derive(Debug, Clone)]
pub struct InteractiveDiag {
    /// 0-based start line.
    pub line: u32,
    /// LSP severity (1 error .. 4 hint).
    pub severity: u64,
    /// The message, as tagged text.
    pub message: Tagged,
}

/// Reads `getInteractiveDiagnostics`' answer.
pub fn parse_interactive_diagnostics(v: &Value) -> Result<Vec<InteractiveDiag>, ShapeError> {
    let arr = v
        .as_array()
        .ok_or_else(|| err("interactive diagnostics: not an array"))?;
    arr.iter()
        .map(|d| {
            let line = d
                .pointer("/range/start/line")
                .and_then(Value::as_u64)
                .ok_or_else(|| err("diagnostic without range"))? as u32;
            let severity = d.get("severity").and_then(Value::as_u64).unwrap_or(1);
            let message = Tagged::parse(
                d.get("message")
                    .ok_or_else(|| err("diagnostic without message"))?,
            )?;
            Ok(InteractiveDiag {
                line,
                severity,
                message,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bundles_expand() {
        let v = json!({"goals": [{
            "hyps": [
                {"names": ["a", "b"], "fvarIds": ["_uniq.1", "_uniq.2"], "type": {"tag": [{"subexprPos": "/", "info": {"p": "0"}}, {"text": "Nat"}]}, "isInstance": false, "isType": false},
                {"names": ["h"], "fvarIds": ["_uniq.3"], "type": {"text": "a < b"}, "isInstance": false, "isType": false}
            ],
            "type": {"text": "True"}, "goalPrefix": "⊢ ", "mvarId": "_uniq.4"}]});
        let g = parse_first_goal(&v).unwrap().unwrap();
        assert_eq!(g.hyps.len(), 3);
        assert_eq!(g.hyps[1].name, "b");
        assert_eq!(g.hyps[1].bundle, 0);
        assert_eq!(g.hyps[2].bundle, 1);
        assert_eq!(g.hyps[2].fvar_id.as_deref(), Some("_uniq.3"));
        assert!(parse_first_goal(&Value::Null).unwrap().is_none());
        assert!(parse_first_goal(&json!({"goals": []})).unwrap().is_none());
    }

    #[test]
    fn message_embeds() {
        let m = Tagged::parse(&json!({"append": [
            {"tag": [{"expr": {"text": "@stmt"}}, {"text": ""}]},
            {"text": " : "},
            {"tag": [{"expr": {"tag": [{"subexprPos": "/", "info": {"p": "1"}}, {"text": "True"}]}}, {"text": ""}]}
        ]})).unwrap();
        let es = message_exprs(&m).unwrap();
        assert_eq!(es.len(), 2);
        assert_eq!(es[1].strip_tags(), "True");
    }
}
