//! `neovim_headless_session`'s phases: a real editor (Debian's Neovim,
//! headless, `tests/lsp_nvim.lua`) on `leanpool lsp`.

use crate::daemon_support::{alive, children_of, BIN};
use crate::{wait_for, CONFIG, TEXT};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// What one Neovim run left: its exit, the record `lsp_nvim.lua` wrote,
/// the server's pid and every worker seen under it.
pub(crate) struct Run {
    pub(crate) record: Value,
    pub(crate) server: Option<i32>,
    pub(crate) workers: BTreeSet<i32>,
}

/// Runs Neovim on `dir/Test.lean` (holding `TEXT`) with the script and
/// `leanpool lsp` (config [`CONFIG`]) until it quits; FAILS when `nvim`
/// is missing. The record must show no error.
pub(crate) fn run(dir: &Path) -> Run {
    let nvim = std::env::var_os("PATH")
        .and_then(|p| std::env::split_paths(&p).map(|d| d.join("nvim")).find(|f| f.is_file()))
        .expect("nvim not found on PATH: the real-editor test needs Neovim (scripts/setup installs it: apt-get install neovim)");
    let d = dir;
    let file = d.join("Test.lean");
    std::fs::write(&file, TEXT).unwrap();
    std::fs::write(d.join("lp.toml"), CONFIG).unwrap();
    let lua = d.join("lsp_nvim.lua");
    std::fs::write(&lua, include_str!("../lsp_nvim.lua")).unwrap();
    let (log, pidfile, result) = (d.join("lsp.log"), d.join("lsp.pid"), d.join("result.json"));
    let child = Command::new(nvim)
        .args(["--headless", "-u", "NONE", "-i", "NONE", "-n"])
        .arg(&file)
        .arg("-c")
        .arg(format!("luafile {}", lua.display()))
        .current_dir(d)
        .env("LEANPOOL_BIN", BIN)
        .env("LP_CONFIG", d.join("lp.toml"))
        .env("LP_LOG", &log)
        .env("LP_PIDFILE", &pidfile)
        .env("LP_RESULT", &result)
        .env("RUST_LOG", "info")
        // Neovim's own files (lsp.log, shada, swap) stay in the temp dir.
        .env("XDG_CONFIG_HOME", d.join("xdg/config"))
        .env("XDG_CACHE_HOME", d.join("xdg/cache"))
        .env("XDG_STATE_HOME", d.join("xdg/state"))
        .env("XDG_DATA_HOME", d.join("xdg/data"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("nvim starts");
    let (status, server, workers) = watch(child, &pidfile, &log);
    let server_log = std::fs::read_to_string(&log).unwrap_or_default();
    let record: Value =
        serde_json::from_str(&std::fs::read_to_string(&result).unwrap_or_else(|e| {
            panic!("no record from nvim ({e}), exit {status:?}; server log:\n{server_log}")
        }))
        .unwrap();
    eprintln!("nvim record: {record:#}");
    assert!(
        status.success() && record.get("error").is_none(),
        "nvim: {status:?} {record:#}\nserver log:\n{server_log}"
    );

    Run {
        record,
        server,
        workers,
    }
}

/// Waits for Neovim to quit (20 min at most), collecting the server's pid
/// (from its pid file) and every process it starts.
fn watch(mut child: Child, pidfile: &Path, log: &Path) -> (ExitStatus, Option<i32>, BTreeSet<i32>) {
    let mut server = None;
    let mut workers = BTreeSet::new();
    let until = Instant::now() + Duration::from_secs(1200);
    let status = loop {
        if server.is_none() {
            server = std::fs::read_to_string(pidfile)
                .ok()
                .and_then(|s| s.trim().parse::<i32>().ok());
        }
        if let Some(s) = server {
            workers.extend(children_of(s));
        }
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "nvim did not finish; server log:\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    (status, server, workers)
}

/// What the server sent for the opened text and what Neovim shows: the
/// error on `decide` (0:30..0:36) and the `sorry` warning on the
/// theorem's name (1:8..1:15), positions in the editor's own text.
pub(crate) fn check_opened(record: &Value, file: &Path) {
    let first = record["published"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["diagnostics"].as_array().is_some_and(|a| a.len() == 2))
        .unwrap_or_else(|| panic!("no complete diagnostics: {record:#}"));
    assert_eq!(
        first["uri"],
        format!("file://{}", file.display()),
        "{first}"
    );
    let mut ds: Vec<Value> = first["diagnostics"].as_array().unwrap().clone();
    ds.sort_by_key(|x| x["range"]["start"]["line"].as_u64());
    assert_eq!(ds[0]["severity"], 1, "{first}");
    assert_eq!(
        ds[0]["range"],
        json!({ "start": { "line": 0, "character": 30 }, "end": { "line": 0, "character": 36 } }),
        "{first}"
    );
    assert!(
        ds[0]["message"].as_str().unwrap().contains("decide"),
        "{first}"
    );
    assert_eq!(ds[1]["severity"], 2, "{first}");
    assert_eq!(
        ds[1]["range"]["start"],
        json!({ "line": 1, "character": 8 }),
        "{first}"
    );
    assert_eq!(ds[1]["message"], "declaration uses `sorry`", "{first}");
    // What Neovim shows (0-based lines, byte columns: the text is ASCII).
    let shown = record["opened"].as_array().unwrap();
    assert_eq!(shown.len(), 2, "{record:#}");
    assert_eq!(
        (
            shown[0]["lnum"].as_u64(),
            shown[0]["col"].as_u64(),
            shown[0]["end_col"].as_u64()
        ),
        (Some(0), Some(30), Some(36)),
        "{record:#}"
    );
    assert_eq!(
        (shown[1]["lnum"].as_u64(), shown[1]["col"].as_u64()),
        (Some(1), Some(8)),
        "{record:#}"
    );
    eprintln!(
        "FIGURE nvim attach -> diagnostics shown, warm worker: {:.0} ms",
        record["open_ms"].as_f64().unwrap()
    );
}

/// The hover and goal answers, and the edit: the error cleared, the
/// `sorry` warning left, shown and as sent.
pub(crate) fn check_answers_and_edit(record: &Value) {
    let hover = &record["hover"];
    assert!(
        hover["err"].is_null() && hover["result"]["contents"].to_string().contains("Nat"),
        "{hover}"
    );
    let goal = &record["goal"];
    let g = goal["result"]["goals"][0].as_str().unwrap_or_default();
    assert!(g.contains("n : Nat") && g.contains("⊢ n + 0 = n"), "{goal}");

    // After the edit: the error cleared, the `sorry` warning left, shown
    // and as sent.
    let after = record["after_edit"].as_array().unwrap();
    assert_eq!(after.len(), 1, "{record:#}");
    assert_eq!(after[0]["lnum"], 1, "{record:#}");
    let last = record["published"].as_array().unwrap().last().unwrap();
    assert_eq!(last["diagnostics"].as_array().unwrap().len(), 1, "{last}");
    assert_eq!(
        last["diagnostics"][0]["message"], "declaration uses `sorry`",
        "{last}"
    );
}

/// Stopped cleanly: the server and every Lean worker it started are gone.
pub(crate) fn check_stopped(run: &Run) {
    let record = &run.record;
    assert_eq!(record["stopped"], true, "{record:#}");
    let server = run.server.expect("the server wrote its pid");
    let workers = &run.workers;
    assert!(!workers.is_empty(), "the server started no worker?");
    wait_for(
        "the server and its workers to exit",
        Duration::from_secs(60),
        || !alive(server) && workers.iter().all(|&w| !alive(w)),
    );
}
