//! Issue 20 on REAL Lean (the WASM build of `scripts/setup`; fails, never
//! skips, without it): a library's own command, written after a term in
//! the middle of a line, where no command-start rule of the guard looks.
//!
//! The library is a project's as `[[project]]` serves it on WASM (its
//! directory after the core library on `LEAN_PATH`), with one module
//! declaring `syntax "leanpool_evil_cmd" : command` and its `macro_rules`
//! (built here with the WASM `lean`, ~30 s). No static vocabulary lists
//! that word: only the pool's scan of its workers' `.olean`s
//! (`leanpool_screen::vocab::LibraryCommands`, made in `Pool::new`) knows
//! it is a command. The module also declares a `scoped` command: refused
//! where its namespace may be open, an identifier elsewhere, as Lean
//! reads it. Run under `flock /tmp/leanpool-lean.lock`.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use leanpool_lean::LeanCommand;
use leanpool_pool::{GuardPolicy, Policies, Pool, PoolConfig};
use leanpool_protocol::{method, CheckParams, CheckResult, CheckStatus};
use leanpool_testkit::answers::messages;

/// The project's module: a command of its own, whose expansion Lean's
/// answer shows (`#check (4242424242 : Nat)`). A plain (non-`module`)
/// file, as most projects have them, with closed-term extraction off:
/// otherwise importing it on the WASM build fails with `(interpreter)
/// unknown declaration 'commandLeanpool_evil_cmd._closed_4'`.
const EVIL_CMD: &str = "set_option compiler.extract_closed false

/-- leanpool's test of issue 20: a library's own command. -/
syntax \"leanpool_evil_cmd\" : command

macro_rules
  | `(leanpool_evil_cmd) => `(#check (4242424242 : Nat))

namespace Scoped.Hidden

/-- A command Lean reads only where `Scoped.Hidden` is open. -/
scoped syntax \"leanpool_scoped_cmd\" : command

macro_rules
  | `(leanpool_scoped_cmd) => `(#check (4343434343 : Nat))

end Scoped.Hidden
";

/// The attack: the library's command after a term, mid-line.
const ATTACK: &str = "import Evil.Cmd\nexample : True := trivial leanpool_evil_cmd\n";

/// The same with the library's scoped command, its namespace opened.
const SCOPED_ATTACK: &str =
    "import Evil.Cmd\nopen Scoped.Hidden\nexample : True := trivial leanpool_scoped_cmd\n";

/// The scoped command's word as an identifier where its namespace is not
/// open: Lean reads it so, and so must the guard (issue 20's residual
/// "a scoped command keyword is refused even outside its namespace").
const SCOPED_HONEST: &str = "import Evil.Cmd\ntheorem u (leanpool_scoped_cmd : Nat) : \
                             leanpool_scoped_cmd + 0 = leanpool_scoped_cmd := Nat.add_zero _\n";

/// Builds `DIR/Evil/Cmd.olean`; returns the WASM command with `DIR` after
/// the core library on `LEAN_PATH` (as `[[project]]` makes it on WASM).
fn build_project(dir: &Path) -> LeanCommand {
    std::fs::create_dir_all(dir.join("Evil")).unwrap();
    std::fs::write(dir.join("Evil/Cmd.lean"), EVIL_CMD).unwrap();
    let json = leanpool_lean::backend::find_backend_json()
        .expect("the WASM Lean of scripts/setup (LEANPOOL_WASM_DIR or .lean-wasm/)");
    let mut lean = LeanCommand::from_backend_json(&json).unwrap();
    let core = lean.lean_path().expect("the core library's LEAN_PATH");
    let lean_path = format!("{core}:{}", dir.display());
    let out = Command::new(&lean.program)
        .args(&lean.args)
        .arg(format!("--root={}", dir.display()))
        .arg("-o")
        .arg(dir.join("Evil/Cmd.olean"))
        .arg(dir.join("Evil/Cmd.lean"))
        .env("LEAN_PATH", &lean_path)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success() && dir.join("Evil/Cmd.olean").is_file(),
        "building Evil.Cmd failed: {:?}\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    lean.env.retain(|(k, _)| k != "LEAN_PATH");
    lean.env.push(("LEAN_PATH".into(), lean_path));
    lean
}

fn config() -> PoolConfig {
    PoolConfig {
        max_workers: Some(1),
        max_workers_per_key: Some(1),
        spares_per_key: 0,
        default_timeout_ms: 300_000,
        start_timeout_ms: 600_000,
        ..PoolConfig::default()
    }
}

async fn check(pool: &Pool, text: &str) -> CheckResult {
    pool.call::<method::Check>(CheckParams::new(text))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_librarys_own_command_after_a_term_is_refused() {
    let dir = std::env::temp_dir().join(format!("leanpool-evil-cmd-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let lean = build_project(&dir);

    // The attack is real: with the guard off, Lean runs the library's
    // command written after the term.
    let open = Policies {
        guard: GuardPolicy {
            enabled: false,
            ..GuardPolicy::default()
        },
        ..Policies::default()
    };
    let pool = Pool::new(lean.clone(), config(), Default::default(), open);
    let r = check(&pool, ATTACK).await;
    assert!(
        messages(&r).contains("4242424242"),
        "Lean did not run the command: {r:?}"
    );
    let r = check(&pool, SCOPED_ATTACK).await;
    assert!(
        messages(&r).contains("4343434343"),
        "Lean did not run the scoped command: {r:?}"
    );
    pool.shutdown(Duration::from_secs(30)).await;

    // The static vocabulary does not know the word: only the scan does.
    assert!(leanpool_screen::screen(ATTACK, &GuardPolicy::default()).is_ok());

    // The guard (default policies) with the pool's scan refuses it, before
    // any worker; an honest text importing the module passes on Lean.
    let pool = Pool::new(lean, config(), Default::default(), Policies::default());
    let r = check(&pool, ATTACK).await;
    assert_eq!(r.status, CheckStatus::Rejected, "{r:?}");
    let reason = r.reason.clone().unwrap_or_default();
    assert!(
        reason.contains("leanpool_evil_cmd") && reason.contains("imported libraries"),
        "{reason}"
    );
    let r = check(&pool, SCOPED_ATTACK).await;
    assert_eq!(r.status, CheckStatus::Rejected, "{r:?}");
    assert!(r.reason.unwrap_or_default().contains("leanpool_scoped_cmd"));
    let honest = "import Evil.Cmd\ntheorem t (n : Nat) : n + 0 = n := Nat.add_zero n\n";
    for text in [honest, SCOPED_HONEST] {
        let r = check(&pool, text).await;
        assert_eq!(r.status, CheckStatus::Ok, "{text}: {r:?}");
    }
    // Opening the namespace's parent does not open it (what the guard's
    // "its last component is written" rests on): the guard lets the text
    // through, and Lean reads the word as an identifier, not the command.
    let parent = SCOPED_ATTACK.replace("open Scoped.Hidden", "open Scoped");
    let r = check(&pool, &parent).await;
    assert_ne!(r.status, CheckStatus::Rejected, "{r:?}");
    assert!(!messages(&r).contains("4343434343"), "{r:?}");
    pool.shutdown(Duration::from_secs(30)).await;
    std::fs::remove_dir_all(&dir).unwrap();
}
