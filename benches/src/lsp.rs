//! `lsp` bench (issue 13 part 5): time from `didOpen` to the first
//! diagnostics of a file, for
//!
//! - *`leanpool lsp`, warm*: the binary run as an editor runs it (stdio,
//!   `--prewarm ''`); `didOpen` is sent once its spare for the file's
//!   imports is ready (the spare's own start-up is printed too);
//! - *fresh Lean file worker*: what `lean --server`'s watchdog spawns for
//!   a `didOpen`: the same Lean command with `--worker`, `initialize` and
//!   `didOpen` written at once, timed from the spawn.
//!
//! Same file (one error and one `sorry`, no imports), same Lean, same
//! machine, one run each; "first diagnostics" = the first
//! `publishDiagnostics` holding both (Lean may publish a partial list
//! first; its time is printed as well). Lean processes start only when
//! `support::wait_for_room` allows (shared machine).
//!
//! Run: `cargo build --release -p leanpool && cargo run --release -p
//! leanpool-benches --bin lsp -- [--leanpool target/release/leanpool]`.
//! Prints markdown.

mod support;

use anyhow::{bail, Context};
use leanpool_lean::framing::{encode, FrameReader};
use leanpool_lean::{lsp, proc, LeanCommand};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};
use support::*;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

const TEXT: &str =
    "theorem bad : 1 + 1 = 3 := by decide\ntheorem sorried (n : Nat) : n + 0 = n := by\n  sorry\n";
const URI: &str = "file:///tmp/leanpool-bench/Bench.lean";
/// Limit for any one phase (a worker start on a loaded machine).
const LIMIT: Duration = Duration::from_secs(900);

#[derive(clap::Parser)]
struct Args {
    /// The `leanpool` binary to run as `leanpool lsp`.
    #[arg(long, default_value = "target/release/leanpool")]
    leanpool: PathBuf,
}

/// Times of one `didOpen`.
struct Opened {
    first: Duration,
    complete: Duration,
}

async fn send(w: &mut (impl AsyncWriteExt + Unpin), v: &Value) -> anyhow::Result<()> {
    w.write_all(&encode(&serde_json::to_vec(v)?)).await?;
    w.flush().await?;
    Ok(())
}

/// Reads messages until `publishDiagnostics` for `URI` holds both
/// diagnostics; times taken from `t0`.
async fn until_diagnostics<R: tokio::io::AsyncRead + Unpin>(
    r: &mut FrameReader<R>,
    t0: Instant,
) -> anyhow::Result<Opened> {
    let mut first = None;
    loop {
        let body = tokio::time::timeout(LIMIT, r.next())
            .await
            .context("no diagnostics in time")??
            .context("the server closed its output")?;
        let m: Value = serde_json::from_slice(&body)?;
        if m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == URI {
            let n = m["params"]["diagnostics"].as_array().map_or(0, Vec::len);
            let at = t0.elapsed();
            first.get_or_insert(at);
            if n >= 2 {
                return Ok(Opened {
                    first: first.unwrap_or(at),
                    complete: at,
                });
            }
        }
    }
}

fn did_open() -> Value {
    json!({ "jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
        "textDocument": { "uri": URI, "languageId": "lean4", "version": 1, "text": TEXT },
        "dependencyBuildMode": "never" } })
}

/// `leanpool lsp` with a warm spare: (spare start-up, didOpen timings).
async fn warm(bin: &PathBuf) -> anyhow::Result<(Duration, Opened)> {
    // The editor's defaults, but a start-up limit that a loaded machine
    // cannot hit (the default 180 s was hit at load average ~20).
    let cfg = std::env::temp_dir().join(format!("leanpool-lsp-bench-{}.toml", std::process::id()));
    std::fs::write(
        &cfg,
        "[pool]\nspares_per_key = 0\nstart_timeout_ms = 900000\n",
    )?;
    let started = Instant::now();
    let mut child = tokio::process::Command::new(bin)
        .args(["lsp", "--prewarm", "", "--config"])
        .arg(&cfg)
        .env("RUST_LOG", "info")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("running {}", bin.display()))?;
    let mut stdin = child.stdin.take().unwrap();
    let mut out = FrameReader::new(child.stdout.take().unwrap());
    let (ready_tx, mut ready) = tokio::sync::watch::channel(false);
    let mut err = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    tokio::spawn(async move {
        while let Ok(Some(line)) = err.next_line().await {
            if line.contains("worker ready") {
                let _ = ready_tx.send(true);
            }
        }
    });
    send(&mut stdin, &json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": { "processId": null, "rootUri": null, "capabilities": {} } })).await?;
    loop {
        let body = out
            .next()
            .await?
            .context("leanpool lsp closed its output")?;
        let m: Value = serde_json::from_slice(&body)?;
        if m["id"] == 1 {
            break;
        }
    }
    send(
        &mut stdin,
        &json!({ "jsonrpc": "2.0", "method": "initialized", "params": {} }),
    )
    .await?;
    tokio::time::timeout(LIMIT, ready.wait_for(|r| *r))
        .await
        .context("the spare never became ready")??;
    let spare = started.elapsed();
    let t0 = Instant::now();
    send(&mut stdin, &did_open()).await?;
    let opened = until_diagnostics(&mut out, t0).await?;
    send(
        &mut stdin,
        &json!({ "jsonrpc": "2.0", "id": 2, "method": "shutdown" }),
    )
    .await?;
    send(&mut stdin, &json!({ "jsonrpc": "2.0", "method": "exit" })).await?;
    drop(stdin);
    let st = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .context("leanpool lsp did not exit")??;
    if !st.success() {
        bail!("leanpool lsp exited with {st}");
    }
    Ok((spare, opened))
}

/// A fresh file worker, as `lean --server` spawns one per opened file.
async fn fresh(cmd: &LeanCommand) -> anyhow::Result<Opened> {
    let mut c = cmd.command(&["--worker"]);
    c.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    let t0 = Instant::now();
    let mut child = proc::spawn(c).context("spawning a Lean worker")?;
    let pid = child.id().unwrap_or(0);
    let mut stdin = child.stdin.take().unwrap();
    let mut out = FrameReader::new(child.stdout.take().unwrap());
    let init = serde_json::to_value(lsp::initialize_params())?;
    send(
        &mut stdin,
        &json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init }),
    )
    .await?;
    send(&mut stdin, &did_open()).await?;
    let r = until_diagnostics(&mut out, t0).await;
    proc::kill_group(pid);
    let _ = child.wait().await;
    r
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Args = clap::Parser::parse();
    let cmd = LeanCommand::detect().context("no Lean backend (run scripts/setup)")?;
    let marker = lean_marker(&cmd);
    // The lsp's spare (its refill starts behind the lease, during the
    // measurement, as in an editor).
    wait_for_room(&marker, 1).await;
    let (spare, w) = warm(&args.leanpool).await?;
    wait_for_room(&marker, 1).await;
    let f = fresh(&cmd).await?;
    let s = |d: Duration| format!("{:.2} s", d.as_secs_f64());
    println!(
        "### `leanpool lsp` vs a fresh Lean file worker, didOpen -> diagnostics ({})\n",
        utc_now()
    );
    println!("| path | first `publishDiagnostics` | complete (error + sorry) |");
    println!("| --- | ---: | ---: |");
    println!(
        "| `leanpool lsp`, warm spare (no imports) | {} | {} |",
        s(w.first),
        s(w.complete)
    );
    println!(
        "| fresh `lean --worker` (spawn + initialize + didOpen) | {} | {} |",
        s(f.first),
        s(f.complete)
    );
    println!("\nThe warm spare itself took {} from `leanpool lsp` start to ready (paid before the editor opens a file).", s(spare));
    println!(
        "Load average at the end: {}",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    Ok(())
}
