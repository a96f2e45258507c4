//! The driver's mechanics against leanpool-testkit's scripted fake Lean,
//! in its noisy (`--chatty`) form: noise on stdout, server-to-client
//! requests, diagnostics before/after the done progress, deaths, panics
//! without exit, forged frames and process-group kills. Nothing here is
//! about Lean's behaviour; `lean_worker.rs` runs the real Lean.
//!
//! `harness = false`: this executable is also the fake worker
//! (`leanpool_testkit::harness::main`).

use leanpool_lean::{proc, Worker, WorkerConfig, WorkerError};
use leanpool_methods::check_on;
use leanpool_protocol::{lsp_error, CheckParams, CheckStatus, Position};
use leanpool_screen::guard::GuardPolicy;
use leanpool_screen::LeanText;
use leanpool_testkit::fake_lean::CHATTY;
use leanpool_testkit::harness::Ctx;
use serde_json::json;
use std::time::Duration;

fn fake(cx: &Ctx) -> WorkerConfig {
    let mut command = cx.fake_command(&[CHATTY]);
    // No log: the worker runs in the default OS sandbox, which (rightly)
    // forbids writing the test's temp dir.
    command.env.retain(|(k, _)| k != "FAKE_LOG");
    let mut cfg = WorkerConfig::new(command);
    // Generous: a starved machine (niced tests next to Lean start-ups) can
    // take seconds to start a process; a healthy fake is ready in ms.
    cfg.start_timeout = Duration::from_secs(60);
    cfg
}

const T: Duration = Duration::from_secs(10);

/// `text` screened: the only kind of text a worker elaborates.
fn lean(text: impl AsRef<str>) -> LeanText {
    leanpool_screen::screen(text.as_ref(), &GuardPolicy::default())
        .expect("the test's text passes the guard")
        .to_lean()
}

async fn diagnostics_for_each_version_and_server_requests_answered(cx: Ctx) {
    let header = "import Init\n";
    let mut w = Worker::spawn(&fake(&cx), header).await.unwrap();
    assert_eq!(w.version(), 1);
    // Alternating versions publish before / after the done progress.
    for round in 0..4 {
        let text = format!("{header}-- 𝓝 round {round}\ntheorem t : 𝓝 = bad := rfl\n");
        let d = w.elaborate(&lean(text), T).await.unwrap();
        assert_eq!(d.len(), 1, "round {round}");
        // "theorem t : " 12 + "𝓝" 2 + " = " 3 = 17 UTF-16 units; line 3
        // of the document sent (the screened document keeps the caller's
        // line end after `import Init` on a line of its own).
        assert_eq!(
            d[0].range.start,
            Position {
                line: 3,
                character: 17
            }
        );
        let ok = w
            .elaborate(&lean(format!("{header}theorem ok : True := trivial\n")), T)
            .await
            .unwrap();
        assert!(ok.is_empty(), "round {round}: stale diagnostics {ok:?}");
    }
    assert_eq!(w.uses(), 8);
    // The fake publishes after the done progress on odd versions: the
    // header's 1, then 3, 5, 7, 9.
    assert_eq!(w.late_diagnostics(), 5);
    let answered = w.request("test/answered", json!({}), T).await.unwrap();
    assert_eq!(answered, json!(["srv-1"]));
    assert_eq!(w.server_requests(), 1);
    assert!(
        w.lsp_requests() >= 10,
        "initialize + 8 waitForDiagnostics + 1"
    );
    assert!(w.stderr_tail().contains("fake server on stderr"));
    assert!(w.is_alive());
    let pid = w.pid();
    w.kill().await;
    assert!(proc::group_members(pid).is_empty());
}

async fn warmup_runs_at_spawn_and_is_not_a_use(cx: Ctx) {
    let mut cfg = fake(&cx);
    cfg.warmup = Some("theorem w : True := trivial\n".into());
    let mut w = Worker::spawn(&cfg, "").await.unwrap();
    assert_eq!((w.version(), w.uses()), (2, 0));
    // A warm-up that fails to elaborate is still just a warm-up.
    let d = w
        .elaborate(&lean("theorem x : True := bad\n"), T)
        .await
        .unwrap();
    assert_eq!(d.len(), 1);
    w.kill().await;
}

async fn check_maps_to_caller_coordinates(cx: Ctx) {
    let caller =
        "-- a comment\n\nimport Init   \n\ntheorem a : True := trivial\ntheorem b : True := bad\n";
    let header = leanpool_screen::header_key(caller);
    assert_eq!(header, "import Init\n");
    let mut w = Worker::spawn(&fake(&cx), &header).await.unwrap();
    let r = check_on(&mut w, &CheckParams::new(caller), T)
        .await
        .unwrap();
    assert_eq!(r.status, CheckStatus::Error);
    assert_eq!(
        r.diagnostics[0].range.start,
        Position {
            line: 5,
            character: 20
        },
        "{r:?}"
    );
    assert!(r.elapsed_ms.is_none());
    let wrong = check_on(
        &mut w,
        &CheckParams::new("import Other\ntheorem a : True := trivial"),
        T,
    )
    .await;
    assert!(matches!(wrong, Err(WorkerError::Internal(_))));
    w.kill().await;
}

async fn timeout_kills_the_whole_group(cx: Ctx) {
    let mut w = Worker::spawn(&fake(&cx), "").await.unwrap();
    let pid = w.pid();
    // The fake forks a `sleep` into its group, then never finishes.
    let p = CheckParams::new("example : True := trivial\n-- FAKE fork\n-- FAKE hang\n")
        .with_timeout_ms(500);
    let r = check_on(&mut w, &p, T).await.unwrap();
    assert_eq!(r.status, CheckStatus::Timeout);
    assert!(!w.is_alive());
    for _ in 0..50 {
        if proc::group_members(pid).is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        proc::group_members(pid),
        Vec::<u32>::new(),
        "group survived"
    );
    assert!(matches!(
        w.elaborate(&lean("theorem x : True := trivial\n"), T).await,
        Err(WorkerError::Died { .. })
    ));
}

async fn crash_reports_stderr_tail(cx: Ctx) {
    let mut w = Worker::spawn(&fake(&cx), "").await.unwrap();
    match w.elaborate(&lean("-- FAKE crash\n"), T).await {
        Err(WorkerError::Died { stderr_tail }) => {
            assert!(stderr_tail.contains("boom: fake crash"), "{stderr_tail}")
        }
        other => panic!("expected Died, got {other:?}"),
    }
    assert!(!w.is_alive());
}

/// The issue-10 attack at the driver: a frame on the worker's stdout that
/// the driver did not ask for (as a smuggled `#eval` writing to
/// `/dev/stdout` produced: a `publishDiagnostics` for a version never sent
/// made every later check `ok`). Each kind ends the request with
/// `Compromised`, kills the process at once and leaves the worker dead for
/// every later request. The fake stands in for Lean because real Lean
/// cannot be made to forge frames while the guard is on.
async fn forged_frames_mark_the_worker_compromised(cx: Ctx) {
    for kind in ["version", "uri", "answer", "junk", "note"] {
        let mut w = Worker::spawn(&fake(&cx), "").await.unwrap();
        let pid = w.pid();
        assert!(
            w.elaborate(&lean("theorem fine : True := trivial\n"), T)
                .await
                .unwrap()
                .is_empty(),
            "{kind}"
        );
        let text = format!("theorem bad\n-- FAKE forge_{kind}\n");
        match w.elaborate(&lean(text), T).await {
            Err(WorkerError::Compromised(what)) => eprintln!("[{kind}] {what}"),
            other => panic!("{kind}: expected Compromised, got {other:?}"),
        }
        assert!(!w.is_alive(), "{kind}");
        assert!(w.compromised().is_some(), "{kind}");
        for _ in 0..250 {
            if proc::group_members(pid).is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(
            proc::group_members(pid),
            Vec::<u32>::new(),
            "{kind}: process survived"
        );
        // Never reused: a later request fails the same way, never `ok`.
        assert!(
            matches!(
                w.elaborate(&lean("theorem fine : True := trivial\n"), T)
                    .await,
                Err(WorkerError::Compromised(_))
            ),
            "{kind}"
        );
    }
}

/// A panic line on stderr is the worker's death even though the process
/// does not exit (the WASM build hangs after `INTERNAL PANIC`): the request
/// fails at once, long before its time limit, and the pool can replace it.
async fn internal_panic_on_stderr_is_death_without_exit(cx: Ctx) {
    let mut w = Worker::spawn(&fake(&cx), "").await.unwrap();
    let pid = w.pid();
    let t = std::time::Instant::now();
    match w
        .elaborate(&lean("-- FAKE panic\n"), Duration::from_secs(60))
        .await
    {
        Err(WorkerError::Panicked {
            message,
            stderr_tail,
        }) => {
            assert_eq!(message, "INTERNAL PANIC: out of memory");
            assert!(
                stderr_tail.contains("some output\nINTERNAL PANIC: out of memory"),
                "{stderr_tail}"
            )
        }
        other => panic!("expected Panicked, got {other:?}"),
    }
    assert!(
        t.elapsed() < Duration::from_secs(30),
        "waited for the time limit: {:?}",
        t.elapsed()
    );
    assert!(
        !proc::group_members(pid).is_empty(),
        "the fake should still be hanging"
    );
    assert!(!w.is_alive());
    assert!(matches!(
        w.elaborate(&lean("theorem x : True := trivial\n"), T).await,
        Err(WorkerError::Panicked { .. })
    ));
    w.kill().await;
    assert!(proc::group_members(pid).is_empty());
}

async fn rpc_call_connects_and_passes_big_session_ids(cx: Ctx) {
    let mut w = Worker::spawn(&fake(&cx), "").await.unwrap();
    w.elaborate(&lean("theorem t : True := trivial\n"), T)
        .await
        .unwrap();
    let pos = lsp_types::Position {
        line: 0,
        character: 20,
    };
    let before = w.lsp_requests();
    let r = w
        .rpc_call("Lean.Widget.getInteractiveGoals", pos, json!({"x": 1}), T)
        .await
        .unwrap();
    assert_eq!(r["method"], "Lean.Widget.getInteractiveGoals");
    assert_eq!(r["position"], json!({"line": 0, "character": 20}));
    // A second call reuses the session: one request, not two.
    w.rpc_call("m", pos, json!(null), T).await.unwrap();
    assert_eq!(w.lsp_requests() - before, 3);
    // References found anywhere in answers are released once each, by a
    // notification (no request counted).
    let answer = json!({"goals": [{"hyps": [{"type": {"tag": [{"info": {"p": "7"}}, "x"]}}], "ctx": {"p": "8"}}], "again": {"p": "7"}});
    let mut refs = vec![];
    leanpool_lean::collect_rpc_refs(&answer, &mut refs);
    assert_eq!(refs, vec![json!({"p": "7"}), json!({"p": "8"})]);
    w.rpc_release(refs).unwrap();
    assert_eq!((w.rpc_refs_released(), w.lsp_requests() - before), (2, 3));
    assert_eq!(
        w.request("test/released", json!({}), T).await.unwrap(),
        json!(["7", "8"])
    );
    let err = w.request("no/such", json!({}), T).await;
    assert!(
        matches!(err, Err(WorkerError::Lsp { code, .. }) if code == lsp_error::METHOD_NOT_FOUND),
        "{err:?}"
    );
    w.kill().await;
}

async fn spawn_failure_is_reported(cx: Ctx) {
    let mut cfg = fake(&cx);
    cfg.command.program = "/nonexistent/lean".into();
    assert!(matches!(
        Worker::spawn(&cfg, "").await,
        Err(WorkerError::Spawn(_))
    ));
    // Starts but never answers `initialize`: bounded by start_timeout.
    let mut cfg = fake(&cx);
    cfg.command.program = "sh".into();
    cfg.command.args = vec!["-c".into(), "sleep 30".into()];
    cfg.start_timeout = Duration::from_millis(300);
    let e = Worker::spawn(&cfg, "").await.err().expect("must fail");
    assert!(
        matches!(e, WorkerError::Spawn(_) | WorkerError::Died { .. }),
        "{e:?}"
    );
}

async fn rejected_texts_never_reach_the_worker(cx: Ctx) {
    let mut w = Worker::spawn(&fake(&cx), "").await.unwrap();
    let r = check_on(&mut w, &CheckParams::new("#eval IO.println \"hi\"\n"), T)
        .await
        .unwrap();
    assert_eq!(r.status, CheckStatus::Rejected);
    assert!(r.reason.as_deref().unwrap_or("").contains("#eval"), "{r:?}");
    assert_eq!(w.uses(), 0);
    // The raw sender (leases, `leanpool lsp`) sends document text only as
    // a screened `LeanText`: a hand-made `didChange` or `didOpen` is refused.
    let raw = w.raw_sender();
    for method in ["textDocument/didChange", "textDocument/didOpen"] {
        let forged = serde_json::json!({ "jsonrpc": "2.0", "method": method, "params": {
            "textDocument": { "uri": w.uri(), "version": 7, "text": "#eval 1" },
            "contentChanges": [{ "text": "#eval IO.println \"hi\"" }] } });
        assert!(!raw.send(&forged), "{method} sent as a raw message");
        // Nor as a request of the worker's own (issue 20: the one other
        // way a message reached Lean; `Worker::send_raw` is gone).
        let e = w.request(method, forged["params"].clone(), T).await;
        assert!(
            matches!(e, Err(WorkerError::Internal(_))),
            "{method}: {e:?}"
        );
    }
    let screened =
        leanpool_screen::screen("theorem t : True := trivial\n", &Default::default()).unwrap();
    assert!(raw.send_text(w.uri().as_str(), 2, &screened.caller_lean_text()));
    w.kill().await;
    // A worker's header is imports only: anything else never starts one.
    for header in ["import Init\n#eval 1\n", "theorem t : True := trivial\n"] {
        let e = Worker::spawn(&fake(&cx), header)
            .await
            .err()
            .expect("refused");
        assert!(matches!(e, WorkerError::Spawn(_)), "{e:?}");
    }
}

/// Workers are SIGKILLed by the kernel when their parent *process* dies
/// (`PR_SET_PDEATHSIG`, so a SIGKILLed daemon leaves no orphan; checked on
/// real Lean in `leanpool/tests/faults.rs`). Linux ties that signal to the
/// spawning *thread*: a worker spawned from a thread that then ends must
/// still live, which is what forking from the spawner thread ensures.
async fn worker_outlives_the_thread_that_spawned_it(cx: Ctx) {
    let rt = tokio::runtime::Handle::current();
    let cfg = fake(&cx);
    let mut w = std::thread::spawn(move || rt.block_on(Worker::spawn(&cfg, "")))
        .join()
        .unwrap()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        w.is_alive(),
        "the worker died with the thread that spawned it"
    );
    let d = w
        .elaborate(&lean("theorem t : True := bad\n"), T)
        .await
        .unwrap();
    assert_eq!(d.len(), 1);
    let pid = w.pid();
    w.kill().await;
    assert!(proc::group_members(pid).is_empty());
}

fn main() {
    leanpool_testkit::harness::main(leanpool_testkit::tests![
        diagnostics_for_each_version_and_server_requests_answered,
        warmup_runs_at_spawn_and_is_not_a_use,
        check_maps_to_caller_coordinates,
        timeout_kills_the_whole_group,
        crash_reports_stderr_tail,
        forged_frames_mark_the_worker_compromised,
        internal_panic_on_stderr_is_death_without_exit,
        rpc_call_connects_and_passes_big_session_ids,
        spawn_failure_is_reported,
        rejected_texts_never_reach_the_worker,
        worker_outlives_the_thread_that_spawned_it,
    ]);
}
