//! `leanpool batch IN.jsonl OUT.jsonl --socket PATH`: a JSONL file of
//! statements through a running daemon.
//!
//! `--method` is any method of `leanpool_protocol::method` that takes an
//! object of params (not `status`, `lease`, `ping`, `shutdown`). Input
//! lines: the method's params plus `"id": ID` (a string or number, unique
//! in the file), e.g. `{"id": ID, "text": "..."}` for `check`; `header` and
//! `statement` (joined with a newline) may stand for `text`. Each line is
//! checked against the method's params type before anything is sent.
//! Output: one line per input, in input order, `{"id": ID, "result":
//! {...}}` or `{"id": ID, "error": {"code", "message"}}`.
//!
//! Crash safety and resuming: [`crate::cmd::jsonl`], the machinery every
//! JSONL command shares.

use crate::cmd::jsonl::{call_with_retry, report_counters, transient, Answered, HasId, JsonlIo};
use anyhow::bail;
use leanpool_protocol::method::{self, Method as _};
use leanpool_protocol::ErrorCode;
use leanpool_rpc::ClientError;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use std::sync::Arc;

/// Methods a batch cannot run: they take no item (`status`, `shutdown`),
/// any JSON (`ping`), or the connection (`lease`).
const NOT_BATCHED: [&str; 4] = [
    method::Status::NAME,
    method::Ping::NAME,
    method::Shutdown::NAME,
    method::Lease::NAME,
];

/// `--method`: a method name a batch can run.
fn batch_method(name: &str) -> Result<&'static str, String> {
    match method::NAMES.iter().find(|m| **m == name) {
        Some(m) if !NOT_BATCHED.contains(m) => Ok(m),
        _ => Err(format!(
            "not a method a batch runs; one of: {}",
            method::NAMES
                .iter()
                .filter(|m| !NOT_BATCHED.contains(m))
                .copied()
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub io: JsonlIo,
    /// The method each line is sent to (`check`, `verify`, `normalize`, `opt`, `gted` ...).
    #[arg(long, default_value = "check", value_parser = batch_method)]
    pub method: &'static str,
    /// The daemon's project every line runs in, unless the line names its
    /// own (`"project": NAME`); default: the daemon's first project.
    #[arg(long, value_name = "NAME")]
    pub project: Option<String>,
}

/// One input line, validated: its id and the method's params.
struct Item {
    id: Value,
    params: Value,
}

impl HasId for Item {
    fn id(&self) -> &Value {
        &self.id
    }
}

/// One output line.
#[derive(serde::Serialize)]
struct Line<'a> {
    id: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ItemError<'a>>,
}

#[derive(serde::Serialize)]
struct ItemError<'a> {
    code: ErrorCode,
    message: &'a str,
}

pub async fn run(args: Args) -> anyhow::Result<i32> {
    let method = args.method;
    let mut run = args.io.start(|v| parse_item(v, method)).await?;
    if let Some(project) = &args.project {
        for i in &mut run.todo {
            if let Some(m) = i.params.as_object_mut() {
                m.entry("project").or_insert_with(|| json!(project));
            }
        }
    }
    let timeout_ms = args.io.timeout_ms;
    let (client, todo) = (run.client.clone(), Arc::new(std::mem::take(&mut run.todo)));
    let ran = args
        .io
        .run(todo.len(), move |i| {
            let (c, todo) = (client.clone(), todo.clone());
            let mut params = todo[i].params.clone();
            if let Some(t) = timeout_ms {
                params["timeout_ms"] = json!(t);
            }
            async move {
                let answer = call_with_retry(&c, method, params).await;
                answer_line(&todo[i].id, answer)
            }
        })
        .await?;
    eprintln!(
        "leanpool batch: {} answered now ({} errors, {} from the result cache), {} already in {}, {} left",
        ran.written,
        ran.errors,
        ran.hits,
        run.skipped,
        args.io.output.display(),
        run.count - ran.written
    );
    report_counters("batch", &run.client, run.before).await;
    Ok(ran.exit_code("batch"))
}

/// `{"id", "result"}` for an answer, `{"id", "error"}` for a method error;
/// a transient error (or a lost daemon) is passed on to stop the run.
fn answer_line(id: &Value, answer: Result<Box<RawValue>, ClientError>) -> Answered {
    // Results are copied as the daemon encoded them (field order kept).
    let encode = |line: &Line| serde_json::to_vec(line).expect("a line encodes");
    match answer {
        Ok(result) => Ok((
            encode(&Line {
                id,
                result: Some(&result),
                error: None,
            }),
            false,
            leanpool_cache::answer::is_cached(result.get()),
        )),
        Err(ClientError::Rpc(e)) if !transient(e.code) => {
            let error = ItemError {
                code: e.code,
                message: &e.message,
            };
            Ok((
                encode(&Line {
                    id,
                    result: None,
                    error: Some(error),
                }),
                true,
                false,
            ))
        }
        Err(e) => Err(e),
    }
}

/// One line: `id` and the method's params, `header` + `statement`
/// standing for `text` when the params do not take them as they are.
/// Fields the params type would ignore are refused (a typo, or a field of
/// another method), so that what is sent is what the line says.
fn parse_item(v: &Value, method: &str) -> anyhow::Result<Item> {
    let mut fields = match v {
        Value::Object(o) => o.clone(),
        _ => bail!("a line is a JSON object"),
    };
    let id = match fields.remove("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => id,
        _ => bail!("`id` (a string or number) is required"),
    };
    let as_is = Value::Object(fields.clone());
    let params = match checked(method, &as_is) {
        Ok(()) => as_is,
        Err(e) => match joined(&fields) {
            Some(p) => checked(method, &p).map(|()| p)?,
            None => return Err(e),
        },
    };
    Ok(Item { id, params })
}

/// `{"header", "statement", ...}` as `{"text": header + "\n" + statement, ...}`.
fn joined(fields: &serde_json::Map<String, Value>) -> Option<Value> {
    if fields.contains_key("text") {
        return None;
    }
    let mut rest = fields.clone();
    let (Some(Value::String(h)), Some(Value::String(st))) =
        (rest.remove("header"), rest.remove("statement"))
    else {
        return None;
    };
    let sep = if h.is_empty() || h.ends_with('\n') {
        ""
    } else {
        "\n"
    };
    rest.insert("text".into(), json!(format!("{h}{sep}{st}")));
    Some(Value::Object(rest))
}

/// `params` decode as `method`'s params, and every field is one they
/// read: a field missing from their re-encoding is either at its default
/// or unknown, told apart by whether a value of the wrong type is refused.
fn checked(method: &str, params: &Value) -> anyhow::Result<()> {
    let reencode = |p: &Value| method::reencode_params(method, p).expect("a batch method");
    let back = reencode(params).map_err(|e| {
        anyhow::anyhow!("not `{method}`'s params (see docs/protocol.md; `header` and `statement` may stand for `text`): {e}")
    })?;
    for (k, v) in params.as_object().into_iter().flatten() {
        // `project` is the daemon's (docs/protocol.md, "Projects").
        if back.get(k).is_some() || (k == "project" && v.is_string()) {
            continue;
        }
        let mut probe = params.clone();
        probe[k] = json!({"\u{1}": []});
        if reencode(&probe).is_ok() {
            bail!("`{method}` takes no field `{k}`");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_forms() {
        let c = "check";
        let i = parse_item(&json!({"id": 1, "text": "theorem t : True := trivial"}), c).unwrap();
        assert_eq!(i.params, json!({"text": "theorem t : True := trivial"}));
        let i = parse_item(&json!({"id": "a", "header": "import Init", "statement": "theorem t : True := trivial"}), c).unwrap();
        assert_eq!(
            i.params,
            json!({"text": "import Init\ntheorem t : True := trivial"})
        );
        assert!(parse_item(&json!({"id": 1}), c).is_err());
        assert!(parse_item(&json!({"text": "x"}), c).is_err());
        assert!(parse_item(&json!({"id": [1], "text": "x"}), c).is_err());
        assert!(parse_item(&json!({"id": 1, "text": "x", "header": "y"}), c).is_err());
        let v = "verify";
        let i = parse_item(
            &json!({"id": 1, "statement": "theorem t : True := sorry", "proof": "trivial"}),
            v,
        )
        .unwrap();
        assert_eq!(
            i.params,
            json!({"statement": "theorem t : True := sorry", "proof": "trivial"})
        );
        assert!(parse_item(&json!({"id": 1, "statement": "theorem t : True"}), v).is_err());
        assert!(parse_item(&json!({"id": 1, "text": "theorem t : True := trivial"}), v).is_err());
        assert!(parse_item(
            &json!({"id": 1, "statement": "s", "proof": "p", "text": "t"}),
            v
        )
        .is_err());
        // Fields at their defaults are the params' own, not unknown.
        let i = parse_item(&json!({"id": 2, "text": "t", "timings": false}), c).unwrap();
        assert_eq!(i.params, json!({"text": "t", "timings": false}));
        assert!(parse_item(&json!({"id": 2, "text": "t", "timing": true}), c).is_err());
        // `project` is the daemon's: a name passes on, anything else does not.
        let i = parse_item(&json!({"id": 4, "text": "t", "project": "judge"}), c).unwrap();
        assert_eq!(i.params, json!({"text": "t", "project": "judge"}));
        assert!(parse_item(&json!({"id": 4, "text": "t", "project": 7}), c).is_err());
        // Any method with object params, by its type: `gted` too.
        let g = json!({"id": 3, "a": {"content": "x"}, "b": {"content": "y"}});
        assert!(parse_item(&g, "gted").is_ok());
        assert!(batch_method("gted").is_ok());
        assert!(batch_method("status").is_err());
        assert!(batch_method("frobnicate").is_err());
    }
}
