//! Several Lean projects from one daemon (issue 25), on real Lean (the
//! WASM build installed by `scripts/setup`; FAILS when it is missing).
//!
//! Set-up builds a small judge-like project once, into a temp dir under
//! `/tmp`, with the WASM `lean` itself: `Judge/Basic.lean` and
//! `Judge/Problem.lean` (which imports Basic), each a `module` with a
//! `public section` and `@[expose]` definitions, compiled by
//! `lean --root=DIR -o DIR/Judge/M.olean DIR/Judge/M.lean` (~30 s each).
//! One daemon then serves the backend's own library as project `core` (the
//! default) and that directory as project `judge`.
//!
//! The input guard is off (`[guard] enabled = false`) so that the
//! sandbox's per-project read rules can be tested with `#eval` reads; the
//! import checks do not depend on the guard (imports are the operator's
//! trusted libraries).
//!
//! Workers: one for `judge` (header `import Judge.Basic / Judge.Problem`),
//! one for `core` on that header (which cannot start: the module is not
//! there) and one for `core` without imports; `[pool] max_workers = 2`, one
//! per project.
//!
//! `serve_project_flag_end_to_end` serves the same kind of package (a Lake
//! package directory with `lakefile.lean` and `lean-toolchain`) through
//! `leanpool serve --project`, with the input guard on, to an editor
//! (`leanpool lsp --socket --project`) and to `leanpool check --project`,
//! then attacks the per-project read rules through imports. Workers: the
//! editor's lease, the check's worker, and one start per leaking import
//! (each fails at its import).

mod daemon_support;

use daemon_support::editor::{self, Editor};
use daemon_support::{connect_expecting_lean, status, Daemon, Lean};
use leanpool_lean::LeanCommand;
use leanpool_protocol::{CheckResult, CheckStatus, ErrorCode, LimitSource, ProjectStatus};
use leanpool_rpc::Client;
use leanpool_testkit::answers::messages;
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const BASIC: &str = "module

public section

/-- Twice `n`: a judge's helper that submissions unfold. -/
@[expose] def Judge.double (n : Nat) : Nat := n + n

theorem Judge.double_eq (n : Nat) : Judge.double n = 2 * n := by
  unfold Judge.double; omega

end
";

const PROBLEM: &str = "module

public import Judge.Basic

public section

/-- A problem built on `Judge.Basic`. -/
@[expose] def Judge.quad (n : Nat) : Nat := Judge.double (Judge.double n)

end
";

/// The judge project's document header: both modules (one worker).
const JUDGE_HEADER: &str = "import Judge.Basic\nimport Judge.Problem\n";

/// Builds `DIR/Judge/{Basic,Problem}.olean` with the WASM `lean` (its
/// backend description, LEAN_PATH = the core library and DIR).
fn build_judge(dir: &Path) {
    std::fs::create_dir_all(dir.join("Judge")).unwrap();
    std::fs::write(dir.join("Judge/Basic.lean"), BASIC).unwrap();
    std::fs::write(dir.join("Judge/Problem.lean"), PROBLEM).unwrap();
    let json = leanpool_lean::backend::find_backend_json().expect(
        "the WASM Lean of scripts/setup (LEANPOOL_WASM_DIR or .lean-wasm/): this test needs real Lean",
    );
    let lean = LeanCommand::from_backend_json(&json).unwrap();
    let core = lean.lean_path().expect("the core library's LEAN_PATH");
    for m in ["Basic", "Problem"] {
        let out = Command::new(&lean.program)
            .args(&lean.args)
            .arg(format!("--root={}", dir.display()))
            .arg("-o")
            .arg(dir.join(format!("Judge/{m}.olean")))
            .arg(dir.join(format!("Judge/{m}.lean")))
            .env("LEAN_PATH", format!("{core}:{}", dir.display()))
            .current_dir(dir)
            .output()
            .unwrap();
        let olean = dir.join(format!("Judge/{m}.olean"));
        assert!(
            out.status.success() && olean.is_file(),
            "building Judge.{m} failed: {:?}\nstdout: {}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

fn config(judge: &Path) -> String {
    format!(
        "[guard]\nenabled = false\n\n[pool]\nmax_workers = 2\nmax_workers_per_key = 1\nspares_per_key = 0\nstart_timeout_ms = 600000\ndefault_timeout_ms = 300000\n\n[cache]\nenabled = false\n\n[[project]]\nname = \"core\"\n\n[[project]]\nname = \"judge\"\ndir = \"{}\"\n",
        judge.display()
    )
}

/// `check` of `text` in `project` (`None`: the default).
async fn check(c: &Client, project: Option<&str>, text: &str) -> Result<CheckResult, ErrorCode> {
    let mut p = json!({ "text": text });
    if let Some(name) = project {
        p["project"] = json!(name);
    }
    c.call_typed::<_, CheckResult>("check", &p)
        .await
        .map_err(|e| e.code().expect("an RPC error"))
}

/// An `#eval` that reads `path` and reports `RAN` or `DENIED: <error>`.
fn read_attempt(path: &Path) -> String {
    format!(
        "#eval show IO String from do\n  try\n    let _ ← IO.FS.readFile \"{}\"\n    pure \"RAN\"\n  catch e => pure s!\"DENIED: {{e}}\"",
        path.display()
    )
}

fn worker_pids(p: &ProjectStatus) -> Vec<u32> {
    p.pool
        .keys
        .iter()
        .flat_map(|k| k.workers.iter().filter_map(|w| w.pid))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_daemon_serves_the_core_library_and_a_judge_project() {
    let dir = tempfile::tempdir_in("/tmp").unwrap();
    let judge = dir.path().join("judge");
    build_judge(&judge);
    let d = Daemon::start(dir.path(), &config(&judge), Lean::Real);
    let c = connect_expecting_lean(&d).await;

    // `import Judge.Basic` works in the judge project, and its exposed
    // definitions unfold.
    let text = format!("{JUDGE_HEADER}theorem t : Judge.quad 1 = 4 := by decide\n");
    let r = check(&c, Some("judge"), &text).await.unwrap();
    assert_eq!(r.status, CheckStatus::Ok, "{r:?}\n{}", d.logs());
    let bad = format!("{JUDGE_HEADER}theorem f : Judge.double 2 = 5 := by decide\n");
    let r = check(&c, Some("judge"), &bad).await.unwrap();
    assert_eq!(r.status, CheckStatus::Error, "{r:?}");

    // ... and is an error in the default project (the core library only).
    match check(&c, None, &text).await {
        Ok(r) => {
            assert_eq!(r.status, CheckStatus::Error, "{r:?}");
            assert!(messages(&r).contains("Judge"), "{r:?}");
        }
        Err(code) => assert_eq!(code, ErrorCode::SpawnFailed),
    }
    let plain = "theorem p : 2 + 2 = 4 := by decide\n";
    let r = check(&c, Some("core"), plain).await.unwrap();
    assert_eq!(r.status, CheckStatus::Ok, "{r:?}\n{}", d.logs());

    // A name the daemon does not serve: UNKNOWN_PROJECT, listing both.
    let e = c
        .call("check", json!({"text": plain, "project": "sair"}))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::UnknownProject), "{e}");
    assert!(e.to_string().contains("core, judge"), "{e}");

    // `status` reports both, each with its Lean and library, and their
    // workers are disjoint.
    let st = status(&c).await;
    let names: Vec<&str> = st.projects.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["core", "judge"]);
    let (core, judge_st) = (&st.projects[0], &st.projects[1]);
    assert_eq!(core.root, None);
    assert_eq!(
        judge_st.root.as_deref(),
        Some(std::fs::canonicalize(&judge).unwrap().to_str().unwrap())
    );
    for p in [core, judge_st] {
        assert!(p
            .backend
            .version
            .as_deref()
            .unwrap()
            .starts_with("Lean (version 4"));
        assert_eq!(p.backend.library.as_ref().unwrap().kind, "oleans");
    }
    let lib = |p: &ProjectStatus| p.backend.library.clone().unwrap();
    assert_eq!(
        lib(judge_st).olean_files.unwrap(),
        lib(core).olean_files.unwrap() + 2
    );
    assert_ne!(lib(judge_st).oleans_sha256, lib(core).oleans_sha256);
    assert_eq!(st.daemon.backend, core.backend, "the default project's");
    let (cp, jp) = (worker_pids(core), worker_pids(judge_st));
    assert_eq!((cp.len(), jp.len()), (1, 1), "{st:?}");
    assert_ne!(cp, jp, "the two projects share a worker");
    assert!(judge_st
        .pool
        .keys
        .iter()
        .all(|k| k.header.contains("Judge")));

    sandbox_reads_are_per_project(&c, &judge).await;
}

/// A project's workers read that project's files; another project's
/// worker is refused them by the sandbox (Landlock rules planned per
/// project from its `LEAN_PATH`).
async fn sandbox_reads_are_per_project(c: &Client, judge: &Path) {
    let file = judge.join("Judge/Basic.lean");
    let text = format!("{JUDGE_HEADER}{}\n", read_attempt(&file));
    let r = check(c, Some("judge"), &text).await.unwrap();
    assert!(messages(&r).contains("RAN"), "the judge worker: {r:?}");
    let r = check(c, Some("core"), &read_attempt(&file)).await.unwrap();
    assert!(messages(&r).contains("DENIED"), "the core worker: {r:?}");
}

/// `leanpool serve --project`: a directory that does not exist, and one
/// with no `.olean`, stop the daemon at start with an error saying what to
/// do; `leanpool doctor --project` reports a built one. No worker starts.
#[test]
fn serve_refuses_a_project_it_cannot_serve() {
    let dir = tempfile::tempdir_in("/tmp").unwrap();
    let socket = dir.path().join("s.sock");
    let serve = |project: &str| {
        let out = Command::new(leanpool_testkit::daemon::binary())
            .args(["serve", "--socket"])
            .arg(&socket)
            .args(["--project", project])
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, err) = serve("judge=/nonexistent/leanpool-judge");
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("/nonexistent/leanpool-judge is not a directory"),
        "{err}"
    );
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let (code, err) = serve(&format!("judge={}", empty.display()));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("is not built") && err.contains("lean --root="),
        "{err}"
    );
    assert!(!socket.exists());
    // `leanpool lsp --project` refuses the same way at start.
    let out = Command::new(leanpool_testkit::daemon::binary())
        .args(["lsp", "--project", "judge=/nonexistent/leanpool-judge"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("is not a directory"), "{err}");

    std::fs::create_dir_all(empty.join("Judge")).unwrap();
    std::fs::write(empty.join("Judge/Basic.olean"), b"not really").unwrap();
    let out = Command::new(leanpool_testkit::daemon::binary())
        .args(["doctor", "--project"])
        .arg(format!("judge={}", empty.display()))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("project:   judge"), "{text}");
    assert!(
        text.contains(&format!(
            ":{}",
            std::fs::canonicalize(&empty).unwrap().display()
        )),
        "{text}"
    );
    assert!(text.contains("library:   oleans sha256"), "{text}");
}

/// A Lake package as a user has it: `lakefile.lean`, `lean-toolchain`.
fn make_lake_package(dir: &Path) {
    std::fs::write(
        dir.join("lakefile.lean"),
        "import Lake\nopen Lake DSL\n\npackage judge\n\n@[default_target]\nlean_lib Judge\n",
    )
    .unwrap();
    std::fs::write(dir.join("lean-toolchain"), "leanprover/lean4:v4.28.0\n").unwrap();
}

/// `leanpool check --socket S --project P FILE --json`: the result.
fn cli_check(socket: &Path, project: &str, file: &Path) -> Value {
    let out = Command::new(daemon_support::BIN)
        .args(["check", "--json", "--timeout-ms", "300000", "--socket"])
        .arg(socket)
        .args(["--project", project])
        .arg(file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "leanpool check gave no JSON ({e}): {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// Issue 25 end to end with the user-facing flags: a Lake package
/// directory (lakefile, lean-toolchain, a module built with the WASM
/// `lean`) served by `leanpool serve --project judge=DIR` next to a core
/// project with a `max_workers` of its own (`[[project]]`) and a second
/// package `other`; `status` shows each project's limits and their
/// source; an editor (`leanpool lsp --socket S --project judge`) imports
/// the package's module; so does `leanpool check --socket S --project
/// judge`; an unknown project reaches the editor as an error.
///
/// Then the per-project read rules (with the default guard on): a module
/// name escaping the library (`import «..».…`) is `rejected` by the guard
/// before any worker; a module under the judge's root that leads out of it
/// (a link to the other project's library, one to a host file: the
/// module path Lean opens lies outside the judge worker's Landlock read
/// rules) is refused by the sandbox, on real Lean: `permission denied`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_project_flag_end_to_end() {
    let dir = tempfile::tempdir_in("/tmp").unwrap();
    let (judge, other) = lay_out_projects(dir.path());
    let config = "[pool]\nmax_workers = 2\nmax_workers_per_key = 1\nspares_per_key = 0\nstart_timeout_ms = 600000\ndefault_timeout_ms = 300000\n\n[cache]\nenabled = false\n\n[[project]]\nname = \"core\"\nmax_workers = 1\n";
    let args = [
        "--project".to_string(),
        format!("judge={}", judge.display()),
        "--project".to_string(),
        format!("other={}", other.display()),
    ];
    let d = Daemon::start_with_args(dir.path(), config, Lean::Real, &args);
    let c = connect_expecting_lean(&d).await;

    worker_limits_per_project(&c).await;
    editors_on_the_daemon(&d);
    cli_check_through_the_socket(&d, dir.path());
    editor_without_a_daemon(&judge);
    attack_import_reads_outside_the_project(&c, &other, &d).await;
}

/// The editors' file and text: the package's module imported, one true
/// and one false theorem about its definition.
const URI: &str = "file:///tmp/leanpool-projects-test/Sub.lean";
const TEXT: &str = "import Judge.Basic\ntheorem t : Judge.double 2 = 4 := by decide\ntheorem f : Judge.double 2 = 5 := by decide\n";

/// The judge package (a Lake package with its built library) in `dir`,
/// project B's library beside it, a host file outside every project, and
/// two links under the judge's root that lead out of it (to B's library,
/// to the host file). Returns (judge, other).
fn lay_out_projects(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let judge = dir.join("judge");
    build_judge(&judge);
    make_lake_package(&judge);
    // Project B: a library of its own (never loaded here), and a host
    // file outside every project.
    let other = dir.join("other");
    std::fs::create_dir_all(other.join("Other")).unwrap();
    std::fs::write(other.join("Other/Secret.olean"), "project B's library").unwrap();
    let host_secret = dir.join("host-secret.olean");
    std::fs::write(&host_secret, "the host's secret").unwrap();
    std::fs::create_dir_all(judge.join("Leak")).unwrap();
    std::os::unix::fs::symlink(
        other.join("Other/Secret.olean"),
        judge.join("Leak/Other.olean"),
    )
    .unwrap();
    std::os::unix::fs::symlink(&host_secret, judge.join("Leak/Host.olean")).unwrap();
    (judge, other)
}

/// Worker limits per project: core's own; the one place core leaves
/// is less than one each for the two others: borrowed from the total
/// (issue 25: the total of 2 is a hard cap over all three).
async fn worker_limits_per_project(c: &Client) {
    let st = status(c).await;
    let names: Vec<&str> = st.projects.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["core", "judge", "other"]);
    let limit = |i: usize| st.projects[i].pool.limits.clone().unwrap().max_workers;
    assert_eq!((limit(0).value, limit(0).source), (1, LimitSource::Project));
    assert_eq!(
        (limit(1).value, limit(1).source),
        (1, LimitSource::Borrowed)
    );
    let total = st.workers.expect("the machine-wide total with 3 projects");
    assert_eq!(
        (total.total.value, total.total.source),
        (2, LimitSource::Configured)
    );
    // The shared total and what bound it (issue 22 part 4): `[pool]`'s 2.
    let total = st.projects[1].pool.limits.clone().unwrap().total.unwrap();
    assert_eq!((total.value, total.source), (2, LimitSource::Configured));
}

/// An editor on the judge project: the package's module is imported,
/// its definitions unfold; the one false theorem is the one error. A
/// project the daemon does not serve: the file shows why.
fn editors_on_the_daemon(d: &Daemon) {
    let socket = d.socket.to_str().unwrap();
    let (uri, text) = (URI, TEXT);
    let mut ed = Editor::start(&["lsp", "--socket", socket, "--project", "judge"]);
    ed.open(uri, text);
    let diags = ed.diagnostics(uri, Duration::from_secs(900), |p| {
        p["version"] == 1 && !p["diagnostics"].as_array().unwrap().is_empty()
    });
    let got = editor::lines(&diags);
    assert_eq!(got.len(), 1, "{diags}\n{}", d.logs());
    assert_eq!((got[0].0, got[0].1), (2, 1), "{got:?}");
    ed.notify(
        "textDocument/didClose",
        json!({ "textDocument": { "uri": uri } }),
    );
    ed.exit();
    let mut ed = Editor::start(&["lsp", "--socket", socket, "--project", "sair"]);
    ed.open(uri, text);
    let diags = ed.diagnostics(uri, Duration::from_secs(120), |p| {
        p["diagnostics"].to_string().contains("UNKNOWN_PROJECT")
            || p["diagnostics"].to_string().contains("unknown project")
    });
    assert!(diags.to_string().contains("core, judge, other"), "{diags}");
    ed.exit();
}

/// The CLI through the socket.
fn cli_check_through_the_socket(d: &Daemon, dir: &Path) {
    let file = dir.join("Sub.lean");
    std::fs::write(&file, TEXT).unwrap();
    let r = cli_check(&d.socket, "judge", &file);
    assert_eq!(r["status"], "error", "{r}");
    let errs: Vec<_> = r["diagnostics"].as_array().unwrap().iter().collect();
    assert_eq!(errs.len(), 1, "{r}");
    assert_eq!(errs[0]["range"]["start"]["line"], 2, "{r}");
}

/// An editor without a daemon: `leanpool lsp --project DIR` runs its own
/// pool's workers on the package's library.
fn editor_without_a_daemon(judge: &Path) {
    let project = format!("judge={}", judge.display());
    let mut ed = Editor::start(&["lsp", "--project", &project, "--no-prewarm"]);
    ed.open(URI, TEXT);
    let diags = ed.diagnostics(URI, Duration::from_secs(900), |p| {
        p["version"] == 1 && !p["diagnostics"].as_array().unwrap().is_empty()
    });
    let got = editor::lines(&diags);
    assert_eq!(got.len(), 1, "{diags}");
    assert_eq!((got[0].0, got[0].1), (2, 1), "{got:?}");
    ed.exit();
}

/// A judge-project text whose import reaches files outside the judge
/// project: refused by the guard when the module name escapes the library
/// (an escaped component that could not be written plainly; one that
/// could, `«Init».«Data».«List»`, is accepted), by the sandbox when a
/// module path leads out of it.
async fn attack_import_reads_outside_the_project(c: &Client, other: &Path, d: &Daemon) {
    let ups = "«..».".repeat(16);
    let rel = other.join("Other/Secret").display().to_string();
    let name: Vec<String> = rel
        .trim_start_matches('/')
        .split('/')
        .map(|s| format!("«{s}»"))
        .collect();
    let escape = format!(
        "import {ups}{}\ntheorem t : True := trivial\n",
        name.join(".")
    );
    let r = check(c, Some("judge"), &escape).await.unwrap();
    assert_eq!(r.status, CheckStatus::Rejected, "{r:?}");
    // The control: escaped components that could be written plainly name
    // the same core module and are accepted (guard on, real import).
    let honest = "import «Init».«Data».«List»\ntheorem t : [1] ++ [] = [1] := List.append_nil _\n";
    let r = check(c, Some("judge"), honest).await.unwrap();
    assert_eq!(r.status, CheckStatus::Ok, "{r:?}");
    for (module, file) in [("Leak.Other", "Other/Secret"), ("Leak.Host", "host-secret")] {
        let text = format!("import {module}\ntheorem t : True := trivial\n");
        let r = c
            .call("check", json!({ "text": text, "project": "judge" }))
            .await;
        eprintln!("{module}: {r:?}");
        let msg = match r {
            Ok(v) => {
                assert_eq!(v["status"], "error", "{v}");
                v["diagnostics"].to_string()
            }
            Err(e) => e.to_string(),
        };
        let link = module.replace('.', "/") + ".olean";
        assert!(
            msg.contains("Permission denied") && msg.contains(&link),
            "{module} (a link to {file}): {msg}\n{}",
            d.logs()
        );
    }
}
