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
//! Crash safety: OUT is only ever appended whole lines (flushed as they
//! are written, fsync'd at least once a second and at the end). A run that
//! dies mid-line leaves a torn last line, which the next run truncates
//! before resuming. Resuming skips every id already in OUT, so rerunning the
//! same command after any interruption completes the file.

use anyhow::{bail, Context};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use leanpool_protocol::method::{self, Method as _, NoParams};
use leanpool_protocol::{Counters, ErrorCode};
use leanpool_rpc::{Client, ClientError};
use serde_json::value::RawValue;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashSet};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    /// Input JSONL: one `{"id", "text"}` or `{"id", "header", "statement"}` per line.
    pub input: PathBuf,
    /// Output JSONL; appended to, and ids already in it are skipped.
    pub output: PathBuf,
    /// The daemon's Unix socket.
    #[arg(long, value_name = "PATH")]
    pub socket: PathBuf,
    /// The method each line is sent to (`check`, `verify`, `normalize`, `opt`, `gted` ...).
    #[arg(long, default_value = "check", value_parser = batch_method)]
    pub method: &'static str,
    /// Requests in flight at once (pipelined on one connection).
    #[arg(long, default_value_t = 4)]
    pub concurrency: usize,
    /// Per-request limit passed to the daemon.
    #[arg(long, value_name = "N")]
    pub timeout_ms: Option<u64>,
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

/// Exit code when the daemon went away mid-run (rerun to resume).
pub(crate) const INTERRUPTED: i32 = 3;

pub async fn run(args: Args) -> anyhow::Result<i32> {
    let mut items = read_input(&args.input, |v| parse_item(v, args.method))?;
    if let Some(project) = &args.project {
        for i in &mut items {
            if let Some(m) = i.params.as_object_mut() {
                m.entry("project").or_insert_with(|| json!(project));
            }
        }
    }
    let done = prepare_output(&args.output)?;
    let todo: Vec<Item> = items
        .into_iter()
        .filter(|i| !done.contains(&key(&i.id)))
        .collect();
    let skipped = done.len();
    let client = connect(&args.socket).await?;
    let before = pool_counters(&client).await;
    let method = args.method;
    let todo = Arc::new(todo);
    let run = {
        let (client, todo) = (client.clone(), todo.clone());
        run_ordered(&args.output, todo.len(), args.concurrency, move |i| {
            let (c, todo) = (client.clone(), todo.clone());
            let mut params = todo[i].params.clone();
            if let Some(t) = args.timeout_ms {
                params["timeout_ms"] = json!(t);
            }
            async move {
                let answer = call_with_retry(&c, method, params).await;
                answer_line(&todo[i].id, answer)
            }
        })
        .await?
    };
    eprintln!(
        "leanpool batch: {} answered now ({} errors, {} from the result cache), {skipped} already in {}, {} left",
        run.written,
        run.errors,
        run.hits,
        args.output.display(),
        todo.len() - run.written
    );
    report_counters("batch", &client, before).await;
    Ok(run.exit_code("batch"))
}

/// Connects to the daemon, saying what to start when nothing listens.
pub(crate) async fn connect(socket: &Path) -> anyhow::Result<Arc<Client>> {
    let client = Client::connect(socket)
        .await
        .with_context(|| format!("is `leanpool serve --socket {}` running?", socket.display()))?;
    Ok(Arc::new(client))
}

/// One item's line for OUT (without its newline), whether it records an
/// error, and whether the daemon's result cache gave it; `Err` is a daemon
/// that went away (the run stops, resumable).
pub(crate) type Answered = Result<(Vec<u8>, bool, bool), ClientError>;

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

/// What [`run_ordered`] did.
pub(crate) struct Run {
    /// Lines written by this run.
    pub written: usize,
    /// Of those, lines that record an error.
    pub errors: usize,
    /// Of those, answers the daemon's result cache gave (`"cached": true`).
    pub hits: usize,
    /// Why the run stopped early (the daemon went away), if it did.
    pub fatal: Option<ClientError>,
}

impl Run {
    /// 0, or [`INTERRUPTED`] after saying how to resume.
    pub fn exit_code(&self, command: &str) -> i32 {
        match &self.fatal {
            Some(e) => {
                eprintln!("leanpool {command}: stopped: {e}; rerun the same command to resume");
                INTERRUPTED
            }
            None => 0,
        }
    }
}

/// Runs `job(0..count)` with up to `concurrency` in flight and appends
/// their lines to `output` in index order (flushed as written, fsync'd at
/// least once a second and at the end): the resumable part of `batch`,
/// shared by every JSONL command. A job's `Err` stops starting new ones;
/// the lines before it are kept.
pub(crate) async fn run_ordered<F, Fut>(
    output: &Path,
    count: usize,
    concurrency: usize,
    mut job: F,
) -> anyhow::Result<Run>
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = Answered> + Send + 'static,
{
    let mut out = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(output)?;
    let bar = progress(count as u64);
    let concurrency = concurrency.max(1);
    // Answers arrive in any order but are written in input order; starting
    // at most `window` items past the first unwritten one bounds memory.
    let window = (concurrency * 8).max(64);
    let mut tasks = tokio::task::JoinSet::new();
    let mut ready: BTreeMap<usize, Vec<u8>> = BTreeMap::new();
    let (mut next_start, mut next_write, mut errors, mut hits) = (0usize, 0usize, 0usize, 0usize);
    let mut last_sync = Instant::now();
    let mut fatal: Option<ClientError> = None;
    loop {
        while fatal.is_none()
            && tasks.len() < concurrency
            && next_start < count
            && next_start < next_write + window
        {
            let (i, fut) = (next_start, job(next_start));
            tasks.spawn(async move { (i, fut.await) });
            next_start += 1;
        }
        let Some(joined) = tasks.join_next().await else {
            break;
        };
        let (i, answer) = joined.context("batch task panicked")?;
        let mut bytes = match answer {
            Ok((bytes, is_error, cached)) => {
                errors += is_error as usize;
                hits += cached as usize;
                bytes
            }
            Err(e) => {
                // The daemon is gone or shutting down: stop starting work;
                // what is answered so far is written, the rest is resumable.
                fatal.get_or_insert(e);
                continue;
            }
        };
        bytes.push(b'\n');
        ready.insert(i, bytes);
        while let Some(bytes) = ready.remove(&next_write) {
            out.write_all(&bytes)?;
            next_write += 1;
            bar.inc(1);
        }
        if last_sync.elapsed() >= Duration::from_secs(1) {
            out.sync_data()?;
            last_sync = Instant::now();
        }
    }
    out.sync_data()?;
    bar.finish_and_clear();
    Ok(Run {
        written: next_write,
        errors,
        hits,
        fatal,
    })
}

/// Prints what the run cost the daemon (other clients' requests meanwhile
/// included): worker starts, and requests that waited for one.
pub(crate) async fn report_counters(command: &str, client: &Client, before: Option<Counters>) {
    if let (Some(b), Some(a)) = (before, pool_counters(client).await) {
        let d = |k: fn(&Counters) -> u64| k(&a).saturating_sub(k(&b));
        eprintln!(
            "leanpool {command}: daemon meanwhile: {} worker starts, {} cold_waits (requests that waited for a start), {} timeouts, {} spare takeovers",
            d(|c| c.spawns),
            d(|c| c.cold_waits),
            d(|c| c.timeouts),
            d(|c| c.spare_takeovers)
        );
    }
}

/// The daemon's pool counters (`status`), if it answers.
pub(crate) async fn pool_counters(c: &Client) -> Option<Counters> {
    Some(
        c.request::<method::Status>(&NoParams)
            .await
            .ok()?
            .pool
            .counters,
    )
}

/// Errors worth waiting out (`OVERLOADED`) or that end the run rather than
/// being recorded as the item's answer (`SHUTTING_DOWN`).
pub(crate) fn transient(code: ErrorCode) -> bool {
    code == ErrorCode::Overloaded || code == ErrorCode::ShuttingDown
}

/// Calls `method`, waiting out `OVERLOADED` answers (backing off up to 5 s).
pub(crate) async fn call_with_retry(
    c: &Client,
    method: &str,
    params: Value,
) -> Result<Box<RawValue>, ClientError> {
    let mut pause = Duration::from_millis(100);
    for _ in 0..12 {
        match c.call_raw(method, params.clone()).await {
            Err(ClientError::Rpc(e)) if e.code == ErrorCode::Overloaded => {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(5));
            }
            other => return other,
        }
    }
    c.call_raw(method, params).await
}

/// Canonical text of an id, for set membership.
pub(crate) fn key(id: &Value) -> String {
    id.to_string()
}

/// An input line, validated: its id (a string or number) and the rest.
pub(crate) trait HasId {
    /// The line's `id`.
    fn id(&self) -> &Value;
}

impl HasId for Item {
    fn id(&self) -> &Value {
        &self.id
    }
}

/// Reads a JSONL input file: each non-blank line parsed by `parse`, ids
/// unique; errors name the file and line.
pub(crate) fn read_input<T: HasId>(
    path: &Path,
    parse: impl Fn(&Value) -> anyhow::Result<T>,
) -> anyhow::Result<Vec<T>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut items = Vec::new();
    let mut seen = HashSet::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = || format!("{}:{}", path.display(), n + 1);
        let v: Value = serde_json::from_str(line).with_context(|| format!("{}: not JSON", at()))?;
        let item = parse(&v).with_context(at)?;
        if !seen.insert(key(item.id())) {
            bail!("{}: duplicate id {}", at(), item.id());
        }
        items.push(item);
    }
    Ok(items)
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

/// Reads the ids already answered in `path` and cuts a torn last line.
pub(crate) fn prepare_output(path: &Path) -> anyhow::Result<HashSet<String>> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(HashSet::new()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    if complete < bytes.len() {
        eprintln!(
            "leanpool batch: dropping a torn last line of {}",
            path.display()
        );
        let f = std::fs::OpenOptions::new().write(true).open(path)?;
        f.set_len(complete as u64)?;
        f.sync_data()?;
    }
    let mut done = HashSet::new();
    for (n, line) in bytes[..complete].split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let v: Value = serde_json::from_slice(line).with_context(|| {
            format!(
                "{}:{}: not a leanpool batch line; refusing to append",
                path.display(),
                n + 1
            )
        })?;
        match v.get("id") {
            Some(id) => done.insert(key(id)),
            None => bail!("{}:{}: line without `id`", path.display(), n + 1),
        };
    }
    Ok(done)
}

/// A progress bar on a terminal; nothing otherwise (logs stay clean).
fn progress(len: u64) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::hidden());
    }
    let bar = ProgressBar::new(len);
    if let Ok(style) = ProgressStyle::with_template("{bar:40} {pos}/{len} {per_sec} eta {eta}") {
        bar.set_style(style);
    }
    bar
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

    #[test]
    fn resume_truncates_a_torn_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.jsonl");
        std::fs::write(
            &p,
            "{\"id\":1,\"result\":{}}\n{\"id\":\"b\",\"error\":{}}\n{\"id\":3,\"res",
        )
        .unwrap();
        let done = prepare_output(&p).unwrap();
        assert_eq!(done, HashSet::from(["1".to_string(), "\"b\"".to_string()]));
        assert!(std::fs::read_to_string(&p).unwrap().ends_with("{}}\n"));
        std::fs::write(&p, "garbage\n").unwrap();
        assert!(prepare_output(&p).is_err());
    }
}
