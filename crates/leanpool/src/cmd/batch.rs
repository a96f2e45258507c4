//! `leanpool batch IN.jsonl OUT.jsonl --socket PATH`: a JSONL file of
//! statements through a running daemon.
//!
//! Input lines: `{"id": ID, "text": "..."}` or `{"id": ID, "header": "...",
//! "statement": "..."}` (joined with a newline); ID is a string or number,
//! unique in the file. With `--method verify`: `{"id": ID, "header": "...",
//! "statement": "...", "proof": "..."}` (`header` optional). Output: one line per input, in input order,
//! `{"id": ID, "result": {...}}` or `{"id": ID, "error": {"code", "message"}}`.
//!
//! Crash safety: OUT is only ever appended whole lines (flushed as they
//! are written, fsync'd at least once a second and at the end). A run that
//! dies mid-line leaves a torn last line, which the next run truncates
//! before resuming. Resuming skips every id already in OUT, so rerunning the
//! same command after any interruption completes the file.

use anyhow::{bail, Context};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use leanpool_protocol::method::{self, Method as _};
use leanpool_protocol::{Counters, ErrorCode};
use leanpool_rpc::{Client, ClientError};
use serde_json::value::RawValue;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashSet};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Method {
    Check,
    Normalize,
    Opt,
    Verify,
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
    #[arg(long, value_enum, default_value = "check")]
    pub method: Method,
    /// Requests in flight at once (pipelined on one connection).
    #[arg(long, default_value_t = 4)]
    pub concurrency: usize,
    /// Per-request limit passed to the daemon.
    #[arg(long, value_name = "N")]
    pub timeout_ms: Option<u64>,
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
const INTERRUPTED: i32 = 3;

pub async fn run(args: Args) -> anyhow::Result<i32> {
    let items = read_input(&args.input, args.method)?;
    let done = prepare_output(&args.output)?;
    let todo: Vec<Item> = items
        .into_iter()
        .filter(|i| !done.contains(&key(&i.id)))
        .collect();
    let skipped = done.len();
    let client = Arc::new(Client::connect(&args.socket).await.with_context(|| {
        format!(
            "is `leanpool serve --socket {}` running?",
            args.socket.display()
        )
    })?);
    let mut out = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&args.output)?;
    let before = pool_counters(&client).await;
    let bar = progress(todo.len() as u64);
    let method = match args.method {
        Method::Check => method::Check::NAME,
        Method::Normalize => method::Normalize::NAME,
        Method::Opt => method::Opt::NAME,
        Method::Verify => method::Verify::NAME,
    };
    let concurrency = args.concurrency.max(1);
    // Answers arrive in any order but are written in input order; starting
    // at most `window` items past the first unwritten one bounds memory.
    let window = (concurrency * 8).max(64);
    let mut tasks = tokio::task::JoinSet::new();
    let mut ready: BTreeMap<usize, Vec<u8>> = BTreeMap::new();
    let (mut next_start, mut next_write, mut errors) = (0usize, 0usize, 0usize);
    let mut last_sync = Instant::now();
    let mut fatal: Option<ClientError> = None;
    loop {
        while fatal.is_none()
            && tasks.len() < concurrency
            && next_start < todo.len()
            && next_start < next_write + window
        {
            let (c, i) = (client.clone(), next_start);
            let mut params = todo[i].params.clone();
            if let Some(t) = args.timeout_ms {
                params["timeout_ms"] = json!(t);
            }
            tasks.spawn(async move { (i, call_with_retry(&c, method, params).await) });
            next_start += 1;
        }
        let Some(joined) = tasks.join_next().await else {
            break;
        };
        let (i, answer) = joined.context("batch task panicked")?;
        let id = &todo[i].id;
        // Results are copied as the daemon encoded them (field order kept).
        let mut bytes = match answer {
            Ok(result) => serde_json::to_vec(&Line {
                id,
                result: Some(&result),
                error: None,
            })?,
            Err(ClientError::Rpc(e)) if !transient(e.code) => {
                errors += 1;
                let error = ItemError {
                    code: e.code,
                    message: &e.message,
                };
                serde_json::to_vec(&Line {
                    id,
                    result: None,
                    error: Some(error),
                })?
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
    let written = next_write;
    eprintln!(
        "leanpool batch: {written} answered now ({errors} errors), {skipped} already in {}, {} left",
        args.output.display(),
        todo.len() - written
    );
    // What the run cost the daemon (other clients' requests meanwhile
    // included): worker starts, and requests that waited for one.
    if let (Some(b), Some(a)) = (before, pool_counters(&client).await) {
        let d = |k: fn(&Counters) -> u64| k(&a).saturating_sub(k(&b));
        eprintln!(
            "leanpool batch: daemon meanwhile: {} worker starts, {} cold_waits (requests that waited for a start), {} timeouts, {} spare takeovers",
            d(|c| c.spawns),
            d(|c| c.cold_waits),
            d(|c| c.timeouts),
            d(|c| c.spare_takeovers)
        );
    }
    if let Some(e) = fatal {
        eprintln!("leanpool batch: stopped: {e}; rerun the same command to resume");
        return Ok(INTERRUPTED);
    }
    Ok(0)
}

/// The daemon's pool counters (`status`), if it answers.
async fn pool_counters(c: &Client) -> Option<Counters> {
    Some(c.status().await.ok()?.pool.counters)
}

/// Errors worth waiting out (`OVERLOADED`) or that end the run rather than
/// being recorded as the item's answer (`SHUTTING_DOWN`).
fn transient(code: ErrorCode) -> bool {
    code == ErrorCode::Overloaded || code == ErrorCode::ShuttingDown
}

async fn call_with_retry(
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
fn key(id: &Value) -> String {
    id.to_string()
}

fn read_input(path: &Path, method: Method) -> anyhow::Result<Vec<Item>> {
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
        let item = parse_item(&v, method).with_context(at)?;
        if !seen.insert(key(&item.id)) {
            bail!("{}: duplicate id {}", at(), item.id);
        }
        items.push(item);
    }
    Ok(items)
}

fn parse_item(v: &Value, method: Method) -> anyhow::Result<Item> {
    let id = match v.get("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
        _ => bail!("`id` (a string or number) is required"),
    };
    let s = |k: &str| v.get(k).and_then(Value::as_str);
    if method == Method::Verify {
        let (Some(st), Some(proof)) = (s("statement"), s("proof")) else {
            bail!("`verify` lines need `statement` and `proof` (strings), `header` optional")
        };
        if v.get("header").is_some_and(|h| !h.is_string()) || v.get("text").is_some() {
            bail!("`verify` lines take `header`, `statement` and `proof` (strings), not `text`")
        }
        let mut params = json!({ "statement": st, "proof": proof });
        if let Some(h) = s("header") {
            params["header"] = json!(h);
        }
        return Ok(Item { id, params });
    }
    let text = match (s("text"), s("header"), s("statement")) {
        (Some(t), None, None) => t.to_string(),
        (None, Some(h), Some(st)) => {
            let sep = if h.is_empty() || h.ends_with('\n') {
                ""
            } else {
                "\n"
            };
            format!("{h}{sep}{st}")
        }
        _ => bail!("expected `text`, or `header` and `statement` (strings)"),
    };
    Ok(Item {
        id,
        params: json!({ "text": text }),
    })
}

/// Reads the ids already answered in `path` and cuts a torn last line.
fn prepare_output(path: &Path) -> anyhow::Result<HashSet<String>> {
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
        let c = Method::Check;
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
        let v = Method::Verify;
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
