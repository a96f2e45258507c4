//! `leanpool gted pairs IN.jsonl OUT.jsonl --socket PATH`: the GTED metric
//! (and, with `--equiv`, the `equiv` method) on reference/candidate pairs,
//! through a running daemon.
//!
//! Input lines: `{"id", "header" (optional), "reference", "candidate",
//! "label" (optional, the human judgement: same meaning?)}`. Per pair the
//! daemon's `opt` elaborates both statements (header, newline, statement)
//! and the similarity of their trees is computed here. Output, one line per
//! input in input order: `{"id", "similarity", "same", "label", "mode",
//! "threshold", "reference": {"status", "tree", ...}, "candidate": {...},
//! "equiv": {...} (with `--equiv`)}`; a candidate that does not elaborate (`error`,
//! `rejected`) scores 0, as in the GTED paper; a reference that does not
//! elaborate, a time-out or a method error makes the line `{"id", "error":
//! {"message", "code"}, ...}` (not scored). Resumable as `leanpool batch`
//! is (the same machinery: [`crate::cmd::jsonl`]); the summary
//! at the end is computed from every line of OUT.

use super::ModeArg;
use crate::cmd::jsonl::{self, Answered, HasId, JsonlIo};
use anyhow::{bail, Context};
use leanpool_gted::eval::Confusion;
use leanpool_gted::{score, Mode, OpTree, Options};
use leanpool_protocol::method::{self, Method as _};
use leanpool_protocol::{CheckStatus, Diagnostic, EquivResult, ErrorCode, Node, OptResult};
use leanpool_rpc::{Client, ClientError};
use serde::Serialize;
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub io: JsonlIo,
    #[arg(long, value_enum, default_value_t = ModeArg::default())]
    pub mode: ModeArg,
    /// Similarities >= this count as "same" (default: the paper's threshold).
    #[arg(long, default_value_t = leanpool_gted::eval::PAPER_THRESHOLD)]
    pub threshold: f64,
    /// Also ask the daemon's `equiv` for each pair (the summary then
    /// reports `equiv` alone and combined with GTED).
    #[arg(long)]
    pub equiv: bool,
}

/// One input line.
struct Pair {
    id: Value,
    header: String,
    reference: String,
    candidate: String,
    label: Option<bool>,
}

impl HasId for Pair {
    fn id(&self) -> &Value {
        &self.id
    }
}

fn parse_pair(v: &Value) -> anyhow::Result<Pair> {
    let id = match v.get("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
        _ => bail!("`id` (a string or number) is required"),
    };
    let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let (Some(reference), Some(candidate)) = (s("reference"), s("candidate")) else {
        bail!("`reference` and `candidate` (strings) are required")
    };
    if v.get("header").is_some_and(|h| !h.is_string()) {
        bail!("`header` must be a string")
    }
    let label = match v.get("label") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => bail!("`label` must be true, false or absent"),
    };
    Ok(Pair {
        id,
        header: s("header").unwrap_or_default(),
        reference,
        candidate,
        label,
    })
}

/// One side of an output line.
#[derive(Serialize)]
struct SideOut {
    status: CheckStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    tree: Option<Node>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    diagnostics: Vec<Diagnostic>,
}

impl SideOut {
    fn of(r: &OptResult) -> SideOut {
        SideOut {
            status: r.check.status,
            tree: r.tree.clone(),
            diagnostics: r.check.diagnostics.clone(),
        }
    }
}

#[derive(Serialize)]
struct LineError {
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<ErrorCode>,
    message: String,
}

/// One output line (field order is the line's).
#[derive(Serialize)]
struct PairLine<'a> {
    id: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    similarity: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    same: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<LineError>,
    #[serde(skip_serializing_if = "Option::is_none")]
    label: Option<bool>,
    mode: &'static str,
    threshold: f64,
    /// Present (false) only when alpha mode's search hit its cap.
    #[serde(skip_serializing_if = "Option::is_none")]
    exact: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reference: Option<SideOut>,
    #[serde(skip_serializing_if = "Option::is_none")]
    candidate: Option<SideOut>,
    #[serde(skip_serializing_if = "Option::is_none")]
    equiv: Option<EquivResult>,
}

/// What every pair is scored with.
#[derive(Clone, Copy)]
struct Scoring {
    mode: Mode,
    threshold: f64,
    equiv: bool,
    timeout_ms: Option<u64>,
}

pub async fn run(args: Args) -> anyhow::Result<i32> {
    let mut run = args.io.start(parse_pair).await?;
    let scoring = Scoring {
        mode: args.mode.into(),
        threshold: args.threshold,
        equiv: args.equiv,
        timeout_ms: args.io.timeout_ms,
    };
    let (client, todo) = (run.client.clone(), Arc::new(std::mem::take(&mut run.todo)));
    let ran = args
        .io
        .run(todo.len(), move |i| {
            let (c, todo) = (client.clone(), todo.clone());
            async move { score_pair(&c, &todo[i], scoring).await }
        })
        .await?;
    eprintln!(
        "leanpool gted pairs: {} answered now ({} errors), {} already in {}, {} left",
        ran.written,
        ran.errors,
        run.skipped,
        args.io.output.display(),
        run.count - ran.written
    );
    jsonl::report_counters("gted pairs", &run.client, run.before).await;
    print!(
        "{}",
        summary(&args.io.output, args.threshold, scoring.mode)?
    );
    Ok(ran.exit_code("gted pairs"))
}

/// A call's answer: `Ok(Err)` is a method error (recorded on the line),
/// `Err` a lost daemon (the run stops).
type Called<T> = Result<Result<T, LineError>, ClientError>;

async fn call<T: serde::de::DeserializeOwned>(c: &Client, m: &str, params: Value) -> Called<T> {
    match jsonl::call_with_retry(c, m, params).await {
        Ok(raw) => match serde_json::from_str(raw.get()) {
            Ok(t) => Ok(Ok(t)),
            Err(e) => Ok(Err(LineError {
                code: None,
                message: format!("the daemon's `{m}` answer is unreadable: {e}"),
            })),
        },
        Err(ClientError::Rpc(e)) if !jsonl::transient(e.code) => Ok(Err(LineError {
            code: Some(e.code),
            message: e.message,
        })),
        Err(e) => Err(e),
    }
}

fn text(header: &str, statement: &str) -> String {
    let sep = if header.is_empty() || header.ends_with('\n') {
        ""
    } else {
        "\n"
    };
    format!("{header}{sep}{statement}")
}

async fn score_pair(c: &Client, p: &Pair, s: Scoring) -> Answered {
    let opt = |stmt: &str| {
        let mut v = json!({ "text": text(&p.header, stmt) });
        if let Some(t) = s.timeout_ms {
            v["timeout_ms"] = json!(t);
        }
        v
    };
    let equiv = async {
        if !s.equiv {
            return Ok(Ok(None));
        }
        let mut v = json!({"header": p.header, "a": p.reference, "b": p.candidate});
        if let Some(t) = s.timeout_ms {
            v["timeout_ms"] = json!(t);
        }
        call::<EquivResult>(c, method::Equiv::NAME, v)
            .await
            .map(|r| r.map(Some))
    };
    let (r, k, e) = tokio::join!(
        call::<OptResult>(c, method::Opt::NAME, opt(&p.reference)),
        call::<OptResult>(c, method::Opt::NAME, opt(&p.candidate)),
        equiv
    );
    let (r, k, e) = (r?, k?, e?);
    let mut line = PairLine {
        id: &p.id,
        similarity: None,
        same: None,
        error: None,
        label: p.label,
        mode: s.mode.name(),
        threshold: s.threshold,
        exact: None,
        reference: r.as_ref().ok().map(SideOut::of),
        candidate: k.as_ref().ok().map(SideOut::of),
        equiv: None,
    };
    line.error = match (&r, &k, e) {
        (Err(e), _, _) | (_, Err(e), _) => Some(LineError {
            code: e.code,
            message: e.message.clone(),
        }),
        (_, _, Err(e)) => Some(e),
        (Ok(r), Ok(k), Ok(e)) => {
            line.equiv = e;
            judge(r, k, &s, &mut line)
        }
    };
    let is_error = line.error.is_some();
    Ok((
        serde_json::to_vec(&line).expect("a line encodes"),
        is_error,
        false,
    ))
}

/// Scores an elaborated pair into `line`, or says why it is not scored.
fn judge(r: &OptResult, k: &OptResult, s: &Scoring, line: &mut PairLine) -> Option<LineError> {
    let error = |message: String| {
        Some(LineError {
            code: None,
            message,
        })
    };
    let Some(rt) = &r.tree else {
        return error(format!(
            "the reference does not elaborate (status {}); fix it or drop the line",
            status_name(r.check.status)
        ));
    };
    if k.check.status == CheckStatus::Timeout {
        return error("the candidate timed out; rerun with a larger --timeout-ms".into());
    }
    let (similarity, exact) = match &k.tree {
        // A candidate that does not elaborate scores 0, as in the paper.
        None => (0.0, true),
        Some(kt) => {
            let tree =
                |n: &Node| OpTree::from_json(&serde_json::to_value(n).expect("a tree encodes"));
            match (tree(rt), tree(kt)) {
                (Ok(a), Ok(b)) => {
                    let sc = score(&a, &b, s.mode, &Options::default());
                    (sc.similarity, sc.exact)
                }
                (Err(e), _) | (_, Err(e)) => {
                    return error(format!("the daemon's tree is unreadable: {e}"))
                }
            }
        }
    };
    line.similarity = Some(similarity);
    line.same = Some(similarity >= s.threshold);
    line.exact = (!exact).then_some(false);
    None
}

fn status_name(s: CheckStatus) -> String {
    serde_json::to_value(s)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The metrics over every scored, labelled line of `out`, as a markdown
/// table: GTED at `threshold`, and with `equiv` verdicts `equiv` alone
/// (`equivalent` ⇒ same) and both (`equivalent` ⇒ same, `not_equivalent`
/// ⇒ not same, else GTED).
pub fn summary(out: &Path, threshold: f64, mode: Mode) -> anyhow::Result<String> {
    let text =
        std::fs::read_to_string(out).with_context(|| format!("reading {}", out.display()))?;
    let (mut lines, mut errors) = (0, 0);
    let (mut human, mut gted, mut eq, mut both) = (vec![], vec![], vec![], vec![]);
    let mut verdicts = std::collections::BTreeMap::<String, usize>::new();
    for l in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(l)
            .with_context(|| format!("{}: a line is not JSON", out.display()))?;
        lines += 1;
        let Some(sim) = v.get("similarity").and_then(Value::as_f64) else {
            errors += 1;
            continue;
        };
        let verdict = v.pointer("/equiv/status").and_then(Value::as_str);
        if let Some(vd) = verdict {
            *verdicts.entry(vd.to_string()).or_default() += 1;
        }
        let Some(h) = v.get("label").and_then(Value::as_bool) else {
            continue;
        };
        let g = sim >= threshold;
        human.push(h);
        gted.push(g);
        eq.push(verdict == Some("equivalent"));
        both.push(match verdict {
            Some("equivalent") => true,
            Some("not_equivalent") => false,
            _ => g,
        });
    }
    let mut s = format!(
        "{lines} lines in {}: {} scored, {errors} errors; {} labelled\n\n",
        out.display(),
        lines - errors,
        human.len()
    );
    s.push_str("| metric | TP | TN | FP | FN | accuracy | precision | recall | kappa |\n");
    s.push_str("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    let mut row = |name: String, pred: &[bool]| {
        let c = Confusion::of(pred, &human);
        s.push_str(&format!(
            "| {name} | {} | {} | {} | {} | {:.3} | {:.3} | {:.3} | {:.3} |\n",
            c.tp,
            c.tn,
            c.fp,
            c.fn_,
            c.accuracy(),
            c.precision(),
            c.recall(),
            c.kappa()
        ));
    };
    if !human.is_empty() {
        row(format!("GTED ({}) >= {threshold}", mode.name()), &gted);
        if !verdicts.is_empty() {
            row("equiv (equivalent ⇒ same)".into(), &eq);
            row(
                "GTED + equiv (equivalent ⇒ same, not_equivalent ⇒ not)".into(),
                &both,
            );
        }
    }
    if !verdicts.is_empty() {
        let v: Vec<String> = verdicts.iter().map(|(k, n)| format!("{k} {n}")).collect();
        s.push_str(&format!("\nequiv verdicts: {}\n", v.join(", ")));
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_lines() {
        let p = parse_pair(&json!({"id": 1, "reference": "theorem a : True", "candidate": "theorem b : True", "label": true})).unwrap();
        assert_eq!((p.header.as_str(), p.label), ("", Some(true)));
        assert!(parse_pair(&json!({"id": 1, "reference": "x"})).is_err());
        assert!(parse_pair(&json!({"reference": "x", "candidate": "y"})).is_err());
        assert!(
            parse_pair(&json!({"id": 1, "reference": "x", "candidate": "y", "label": "yes"}))
                .is_err()
        );
        assert!(
            parse_pair(&json!({"id": 1, "reference": "x", "candidate": "y", "header": 3})).is_err()
        );
        assert_eq!(
            text("import Init", "theorem t : True"),
            "import Init\ntheorem t : True"
        );
    }

    #[test]
    fn summary_counts_each_metric() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.jsonl");
        let lines = [
            json!({"id": 1, "similarity": 0.9, "label": true, "equiv": {"status": "equivalent"}}),
            json!({"id": 2, "similarity": 0.5, "label": true, "equiv": {"status": "equivalent"}}),
            json!({"id": 3, "similarity": 0.8, "label": false, "equiv": {"status": "not_equivalent"}}),
            json!({"id": 4, "similarity": 0.1, "label": false, "equiv": {"status": "unknown"}}),
            json!({"id": 5, "error": {"message": "x"}}),
            json!({"id": 6, "similarity": 1.0}),
        ];
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(&p, text).unwrap();
        let s = summary(&p, 0.754, Mode::Alpha).unwrap();
        assert!(s.contains("6 lines in"), "{s}");
        assert!(s.contains("5 scored, 1 errors; 4 labelled"), "{s}");
        // GTED: 1 TP, 1 FN (0.5), 1 FP (0.8), 1 TN.
        assert!(
            s.contains("| GTED (alpha) >= 0.754 | 1 | 1 | 1 | 1 | 0.500 |"),
            "{s}"
        );
        assert!(
            s.contains("| equiv (equivalent ⇒ same) | 2 | 2 | 0 | 0 | 1.000 |"),
            "{s}"
        );
        assert!(
            s.contains("not_equivalent ⇒ not) | 2 | 2 | 0 | 0 | 1.000 |"),
            "{s}"
        );
        assert!(
            s.contains("equiv verdicts: equivalent 2, not_equivalent 1, unknown 1"),
            "{s}"
        );
    }
}
