//! What every resumable JSONL command through a daemon (`leanpool batch`,
//! `leanpool gted pairs`) shares: its arguments ([`JsonlIo`]), reading IN
//! and resuming OUT, the ordered pipelined run ([`run_ordered`]), calls
//! that wait out `OVERLOADED`, and the closing report.
//!
//! Crash safety: OUT is only ever appended whole lines (flushed as they
//! are written, fsync'd at least once a second and at the end). A run that
//! dies mid-line leaves a torn last line, which the next run truncates
//! before resuming. Resuming skips every id already in OUT, so rerunning the
//! same command after any interruption completes the file.

use anyhow::{bail, Context};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use leanpool_protocol::method::{self, NoParams};
use leanpool_protocol::{Counters, ErrorCode};
use leanpool_rpc::{Client, ClientError};
use serde_json::value::RawValue;
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The arguments every resumable JSONL run through a daemon takes
/// (`leanpool batch`, `leanpool gted pairs`): its files, the socket, how
/// many items are in flight and their time limit.
#[derive(clap::Args)]
pub struct JsonlIo {
    /// Input JSONL, one item per line (lines as described above).
    pub input: PathBuf,
    /// Output JSONL; appended to, and ids already in it are skipped.
    pub output: PathBuf,
    /// The daemon's Unix socket.
    #[arg(long, value_name = "PATH")]
    pub socket: PathBuf,
    /// Items in flight at once (pipelined on one connection).
    #[arg(long, default_value_t = 4)]
    pub concurrency: usize,
    /// Per-request limit passed to the daemon.
    #[arg(long, value_name = "N")]
    pub timeout_ms: Option<u64>,
}

/// Exit code when the daemon went away mid-run (rerun to resume).
pub(crate) const INTERRUPTED: i32 = 3;

/// A JSONL run once started ([`JsonlIo::start`]).
pub(crate) struct Started<T> {
    /// The input's items OUT does not have yet, in input order.
    pub todo: Vec<T>,
    /// How many there were when the run started.
    pub count: usize,
    /// Items skipped because OUT has them.
    pub skipped: usize,
    /// The daemon's client.
    pub client: Arc<Client>,
    /// The daemon's pool counters before the run, if it answered.
    pub before: Option<Counters>,
}

impl JsonlIo {
    /// Reads IN (each line through `parse`), prepares OUT (a torn last
    /// line truncated) and keeps the items whose ids OUT does not have,
    /// then connects to the daemon.
    pub(crate) async fn start<T: HasId>(
        &self,
        parse: impl Fn(&Value) -> anyhow::Result<T>,
    ) -> anyhow::Result<Started<T>> {
        let items = read_input(&self.input, parse)?;
        let done = prepare_output(&self.output)?;
        let todo: Vec<T> = items
            .into_iter()
            .filter(|i| !done.contains(&key(i.id())))
            .collect();
        let client = connect(&self.socket).await?;
        let before = pool_counters(&client).await;
        Ok(Started {
            count: todo.len(),
            todo,
            skipped: done.len(),
            client,
            before,
        })
    }

    /// [`run_ordered`] into OUT with `--concurrency` in flight.
    pub(crate) async fn run<F, Fut>(&self, count: usize, job: F) -> anyhow::Result<Run>
    where
        F: FnMut(usize) -> Fut,
        Fut: std::future::Future<Output = Answered> + Send + 'static,
    {
        run_ordered(&self.output, count, self.concurrency, job).await
    }
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
