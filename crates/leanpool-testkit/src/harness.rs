//! The runner of the fake-Lean test binaries (`harness = false`), and the
//! setup they share: the executable is also the fake worker, so its
//! `main` is [`main`], which serves as the fake when started as one and
//! otherwise runs the tests, each on its own runtime with a 60 s limit
//! and its own temp dir ([`Ctx`]), killing any worker a failed test left.
//!
//! `cargo test -p CRATE --test NAME -- FILTER` runs the tests whose name
//! contains FILTER.

use crate::{fake_lean, procs};
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::time::Duration;

/// What each test gets: a temp dir of its own (removed afterwards), where
/// the fake's log lives.
pub struct Ctx {
    /// The test's temp dir.
    pub dir: tempfile::TempDir,
}

impl Ctx {
    /// The fake's `FAKE_LOG` (one line per `didChange`: `<pid> <last line>`).
    pub fn log(&self) -> PathBuf {
        self.dir.path().join("fake.log")
    }
    /// The log so far (empty if nothing was logged).
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(self.log()).unwrap_or_default()
    }
    /// A path in the test's temp dir.
    pub fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }
    /// The fake as the "lean" command: this executable with [`fake_lean::ENV`]
    /// set and `FAKE_LOG` in the test's dir; `args` are the fake's
    /// (e.g. [`fake_lean::CHATTY`]).
    #[cfg(feature = "lean")]
    pub fn fake_command(&self, args: &[&str]) -> leanpool_lean::LeanCommand {
        leanpool_lean::LeanCommand {
            program: std::env::current_exe().unwrap(),
            args: args.iter().map(|a| a.to_string()).collect(),
            env: vec![
                (fake_lean::ENV.into(), "1".into()),
                ("FAKE_LOG".into(), self.log().display().to_string()),
            ],
            cwd: None,
            backend: leanpool_lean::BackendKind::Native,
            version: None,
            source: "fake Lean (leanpool-testkit/src/fake_lean.rs)".into(),
        }
    }
    /// A pool of fake workers with `cfg` (start from [`fake_pool_config`])
    /// and [`fake_policies`].
    #[cfg(feature = "pool")]
    pub fn fake_pool(&self, cfg: leanpool_pool::PoolConfig) -> leanpool_pool::Pool {
        leanpool_pool::Pool::new(
            self.fake_command(&[]),
            cfg,
            Default::default(),
            fake_policies(),
        )
    }
}

/// The pool settings every fake-pool test starts from: two workers, one
/// per key, no spares (tests count workers and spawns exactly; the spares
/// tests turn them on), a start-up limit a starved machine still meets.
#[cfg(feature = "pool")]
pub fn fake_pool_config() -> leanpool_pool::PoolConfig {
    leanpool_pool::PoolConfig {
        max_workers: Some(2),
        max_workers_per_key: Some(1),
        spares_per_key: 0,
        start_timeout_ms: 10_000,
        ..leanpool_pool::PoolConfig::default()
    }
}

/// The default policies but no OS sandbox: the fake appends to a log in
/// the test's own temp dir, which the sandbox would (rightly) forbid. The
/// sandbox is tested on real Lean (`leanpool`'s `sandbox_lean`) and in
/// leanpool-lean's unit tests.
#[cfg(feature = "pool")]
pub fn fake_policies() -> leanpool_pool::Policies {
    leanpool_pool::Policies {
        sandbox: leanpool_lean::SandboxConfig {
            mode: leanpool_lean::SandboxMode::Off,
            ..Default::default()
        },
        ..Default::default()
    }
}

/// One test: an async fn taking its [`Ctx`].
pub type TestFn = fn(Ctx) -> Pin<Box<dyn Future<Output = ()> + Send>>;

/// `tests![a, b]`: the named async test fns, for [`main`].
#[macro_export]
macro_rules! tests {
    ($($name:ident),* $(,)?) => {
        vec![$((stringify!($name), (|cx| Box::pin($name(cx))) as $crate::harness::TestFn)),*]
    };
}

/// The test binary's `main`: the fake worker when started as one,
/// otherwise runs `tests` (those matching the first non-flag argument)
/// and exits 1 if any failed or timed out.
pub fn main(tests: Vec<(&'static str, TestFn)>) {
    if fake_lean::is_fake() {
        fake_lean::serve();
    }
    let filter: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let selected: Vec<_> = tests
        .into_iter()
        .filter(|(n, _)| filter.as_deref().is_none_or(|f| n.contains(f)))
        .collect();
    println!("\nrunning {} tests (fake Lean worker)", selected.len());
    let mut failed = Vec::new();
    for (name, f) in selected {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let cx = Ctx {
            dir: tempfile::tempdir().unwrap(),
        };
        let r = rt.block_on(async move {
            tokio::spawn(tokio::time::timeout(Duration::from_secs(60), f(cx))).await
        });
        drop(rt);
        let ok = matches!(r, Ok(Ok(())));
        println!("test {name} ... {}", if ok { "ok" } else { "FAILED" });
        if !ok {
            if let Ok(Err(_)) = r {
                println!("  (timed out after 60 s)");
            }
            failed.push(name);
        }
        // A failed test may leave workers; never let them leak into the next.
        procs::kill_all_workers();
    }
    if failed.is_empty() {
        println!("\ntest result: ok");
    } else {
        println!("\ntest result: FAILED: {failed:?}");
        std::process::exit(1);
    }
}
