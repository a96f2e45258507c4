//! The lease's bounds in time through the editor bridge (issue 26): the
//! per-request time limit, the grace after a cancel, the CPU budget
//! (caps: the attack tests' `lease_request_timeout_ms = 15000`, the
//! default 10 s grace, `lease_cpu_ms = 60000`), and the idle limit (its
//! own test, `lease_idle_timeout_ms = 20000`).

use crate::daemon_support::editor::Editor;
use crate::daemon_support::{self, alive, Rules};
use crate::{wait_until, URI};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// The request limit and the grace of the test's caps.
const LIMIT: Duration = Duration::from_secs(15);
const GRACE: Duration = Duration::from_secs(10);

/// The per-request time limit, the grace and the CPU budget, from
/// version `v` on.
pub(crate) fn bridge_limits(lsp: &mut Editor, rules: &mut Rules, path: &str, header: &str, v: u64) {
    let pid = lsp.leased_pid();
    let asked = time_limit(lsp, rules, path, header, v);
    grace(lsp, rules, path, pid, asked);
    cpu_budget(lsp, rules, path, header, v + 1, pid);
}

/// A slow text, and right behind it its `waitForDiagnostics` (the gate
/// sees the edit first: the bridge's document actor takes requests in
/// the editor's order with edits): answered `RequestFailed` by the
/// limit's own answer at 15 s. The text keeps Lean computing for over a
/// minute ([`daemon_support::slower_theorems`]), so that only the grace
/// can end the worker at 25 s (a text Lean finished in 24 s let the grace
/// check pass with the grace removed). When the request was sent.
fn time_limit(lsp: &mut Editor, rules: &mut Rules, path: &str, header: &str, v: u64) -> Instant {
    lsp.change(
        URI,
        v,
        &format!("{header}{}", daemon_support::slower_theorems()),
    );
    let asked = Instant::now();
    let ans = lsp.try_request(
        "textDocument/waitForDiagnostics",
        json!({ "uri": URI, "version": v }),
        Duration::from_secs(60),
    );
    let took = asked.elapsed();
    rules.check(
        "per-request time limit",
        ans.as_ref()
            .is_some_and(daemon_support::is_time_limit_answer)
            && took >= LIMIT - Duration::from_secs(1)
            && took < LIMIT * 2,
        format!("{path}: after {took:?}: {ans:?}"),
    );
    asked
}

/// Lean was asked to cancel the request. Either it stops computing soon
/// (the worker falls quiet within the grace), or, still computing and
/// not answering, the gate ends the worker once the grace has passed
/// (the note names the cancelled request, not the CPU budget, which
/// would end it later). Either way the worker does not go on computing.
/// With the grace removed, Lean computes on (the text lasts over a
/// minute) until the CPU budget ends it: the note names the budget.
fn grace(lsp: &mut Editor, rules: &mut Rules, path: &str, pid: i32, asked: Instant) {
    // Quiet counts only before the grace would have ended the worker
    // (and some slack for a loaded machine).
    let quiet_by = asked + LIMIT + GRACE + Duration::from_secs(10);
    let mark = lsp.seen.len();
    let until = asked + Duration::from_secs(90);
    let mut seen = "nothing".to_string();
    let mut held = false;
    // The worker's CPU at the last reading while it was there (once it
    // is gone there is nothing to read: `cpu_of` says zero).
    let mut last_read = None;
    while Instant::now() < until {
        let cpu = cpu_of(pid);
        if let Some(read) = leanpool_lean::proc::group_cpu_time(pid as u32) {
            last_read = Some(read);
        }
        let ended = lsp.try_diagnostics_where(URI, mark, Duration::from_secs(3), was_ended);
        if let Some(note) = ended {
            let text = note["diagnostics"].to_string();
            held = text.contains("past its time limit after it was cancelled");
            seen = format!("ended {:?} after the request: {text}", asked.elapsed());
            break;
        }
        if Instant::now() < quiet_by
            && alive(pid)
            && cpu_of(pid).saturating_sub(cpu) < Duration::from_millis(300)
        {
            held = true;
            seen = format!("quiet {:?} after the request", asked.elapsed());
            break;
        }
    }
    let measured = match (leanpool_lean::proc::group_cpu_time(pid as u32), last_read) {
        (Some(cpu), _) => format!("{cpu:?} of CPU in all"),
        (None, Some(cpu)) => format!("gone; {cpu:?} of CPU at its last reading, within 3 s before"),
        (None, None) => "gone before any reading".to_string(),
    };
    eprintln!("{path}: after the time limit, worker {pid} ({measured}): {seen}");
    rules.check(
        "grace: a cancelled request Lean goes on computing ends the worker",
        held,
        format!("{path}: worker {pid}: {seen}"),
    );
    rules.check(
        "a request past its limit does not leave the worker computing",
        daemon_support::quiet_or_gone(pid as u64, Duration::from_secs(30)),
        format!("{path}: worker {pid} still computing"),
    );
}

/// The next edit (on the same worker if it is quiet, else re-opened on a
/// fresh one) changes the first line after the header, so Lean
/// elaborates every slow theorem again: with no request at all, the CPU
/// budget ends it. One slow text costs 35-40 s of CPU on real Lean here,
/// under the 60 s budget: each time the worker falls quiet the theorems
/// are renamed (Lean elaborates them again), up to 4 rounds. The note
/// must come from this worker (the earlier one's end was seen before)
/// and name the budget.
fn cpu_budget(lsp: &mut Editor, rules: &mut Rules, path: &str, header: &str, v: u64, first: i32) {
    let mark = lsp.seen.len();
    let leases = lsp.log_count("document on a leased worker");
    let started = Instant::now();
    let (mut worker, mut round) = (first, 0);
    let mut ended = None;
    // The most CPU seen of the worker the edits run on (its process
    // group, since it started; zero once it is gone).
    let mut spent = Duration::ZERO;
    while ended.is_none() && round < 4 {
        let text = daemon_support::slow_theorems_round(round);
        lsp.change(
            URI,
            v + round,
            &format!("{header}theorem again{round} : True := trivial\n{text}"),
        );
        round += 1;
        // Until the end's note, or the worker falling quiet (the text is
        // elaborated and no budget ended it).
        while started.elapsed() < Duration::from_secs(900) {
            if worker == first && lsp.log_count("document on a leased worker") > leases {
                worker = lsp.leased_pid();
            }
            let cpu = cpu_of(worker);
            spent = spent.max(cpu);
            ended = lsp.try_diagnostics_where(URI, mark, Duration::from_secs(3), was_ended);
            let quiet =
                alive(worker) && cpu_of(worker).saturating_sub(cpu) < Duration::from_millis(300);
            if ended.is_some() || quiet {
                break;
            }
        }
    }
    eprintln!(
        "{path}: CPU budget: worker {worker} (first {first}), {round} slow texts, {:?} after the first, {spent:?} of CPU seen: {ended:?}",
        started.elapsed()
    );
    rules.check(
        "CPU budget per lease",
        ended
            .as_ref()
            .is_some_and(|e| e.to_string().contains("lease_cpu_ms")),
        format!("{path}: pids {first} then {worker}: {ended:?}"),
    );
    rules.check(
        "CPU budget per lease: the worker is killed",
        ended.is_some() && wait_until(Duration::from_secs(30), || !alive(worker)),
        format!("{path}: pid {worker} still runs"),
    );
}

fn was_ended(p: &Value) -> bool {
    p["diagnostics"].to_string().contains("was ended")
}

/// CPU time of the worker's process group so far (zero once it is gone).
fn cpu_of(pid: i32) -> Duration {
    leanpool_lean::proc::group_cpu_time(pid as u32).unwrap_or_default()
}

/// The idle test's `lease_idle_timeout_ms`.
const IDLE: Duration = Duration::from_secs(20);

/// `attack_editor_bridge_idle_file_loses_its_worker`: on stdio, a file
/// the editor asks about every quarter of the idle limit, for twice the
/// limit, keeps its worker; then, nothing sent, its worker is ended one
/// limit after the last request, the note naming the idle limit, and
/// killed.
pub(crate) fn bridge_idle() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("lp.toml");
    let caps = format!("lease_idle_timeout_ms = {}\n", IDLE.as_millis());
    std::fs::write(&cfg, format!("{caps}{}", crate::CONFIG)).unwrap();
    let mut rules = Rules::default();
    let mut lsp = Editor::spawn(&["lsp", "--config", cfg.to_str().unwrap(), "--no-prewarm"]);
    lsp.initialize();
    lsp.open(URI, crate::TEXT);
    lsp.diagnostics_where(URI, 0, Duration::from_secs(900), |p| {
        p["version"] == 1 && p["diagnostics"].as_array().unwrap().len() >= 2
    });
    let pid = lsp.leased_pid();
    let active = Instant::now();
    let (mut asked, mut answered) = (0, 0);
    let mut last = Instant::now();
    while active.elapsed() < IDLE * 2 {
        std::thread::sleep(IDLE / 4);
        asked += 1;
        last = Instant::now();
        let h = lsp.try_request("textDocument/hover", crate::pos(1, 22), crate::SHORT);
        answered += usize::from(h.is_some_and(|h| !h["result"].is_null()));
    }
    let ended_early = lsp.seen.iter().any(|m| was_ended(&m["params"]));
    rules.check(
        "idle limit: a file the editor keeps asking about keeps its worker",
        !ended_early && answered == asked && alive(pid),
        format!(
            "{asked} hovers in {:?}, {answered} answered, ended: {ended_early}",
            active.elapsed()
        ),
    );
    let mark = lsp.seen.len();
    let ended = lsp.try_diagnostics_where(URI, mark, IDLE + Duration::from_secs(20), was_ended);
    let after = last.elapsed();
    eprintln!("stdio: idle file's worker {pid} ended {after:?} after the last request: {ended:?}");
    rules.check(
        "idle limit: an idle file's worker is ended, the limit named",
        ended
            .as_ref()
            .is_some_and(|e| e.to_string().contains("idle limit"))
            && after >= IDLE - Duration::from_secs(1)
            && after < IDLE + Duration::from_secs(10),
        format!("{after:?} after the last request: {ended:?}"),
    );
    rules.check(
        "idle limit: an idle file's worker is killed",
        ended.is_some() && wait_until(Duration::from_secs(30), || !alive(pid)),
        format!("pid {pid} alive: {}", alive(pid)),
    );
    lsp.exit();
    rules.assert_all();
}
