//! `leanpool doctor`: which Lean leanpool would run, and does it work.
//!
//! Everything it reports and runs is taken from one daemon config:
//! `--config`'s, else `DaemonConfig::default()` (the daemon's defaults):
//! worker limits, `[sandbox]` (its mode unless `--sandbox` says
//! otherwise), `[verdict]`, and for `--deep` `[pool]`'s worker start-up
//! settings and `default_timeout_ms`.

use leanpool_daemon::DaemonConfig;
use leanpool_lean::sandbox::{landlock_abi, Plan};
use leanpool_lean::{LeanCommand, SandboxConfig, SandboxMode, WorkerConfig};
use leanpool_methods::check_once;
use leanpool_protocol::{CheckParams, CheckStatus};
use std::path::Path;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct Args {
    /// Also start a worker and check `theorem t : 1 + 1 = 2 := rfl`.
    #[arg(long)]
    pub deep: bool,
    /// The daemon config to report on (worker limits, `[sandbox]`,
    /// `[verdict]`) and to run `--deep` with (default: the daemon's
    /// defaults, worker limits sized to this machine).
    #[arg(long, value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
    /// The sandbox mode to report on (and use for --deep): required,
    /// best-effort or off (default: `[sandbox] mode` of --config, else the
    /// daemon's default).
    #[arg(long, value_name = "MODE")]
    pub sandbox: Option<SandboxMode>,
    /// Report on this Lean project (`[NAME=]DIR`, as `leanpool serve
    /// --project`) instead of the backend's own library: its toolchain,
    /// Lean version, LEAN_PATH and library identity. Repeatable.
    #[arg(long, value_name = "[NAME=]DIR")]
    pub project: Vec<String>,
}

const DEEP_TEXT: &str = "theorem t : 1 + 1 = 2 := rfl\n";

pub async fn run(args: Args) -> anyhow::Result<i32> {
    let command = match LeanCommand::detect() {
        Ok(c) => c,
        Err(e) => {
            println!("backend:   none");
            println!("verdict:   NOT OK: {e}");
            return Ok(1);
        }
    };
    let mut problems: Vec<String> = vec![];
    let cfg = match &args.config {
        Some(p) => match DaemonConfig::load(p) {
            Ok(c) => c,
            Err(e) => {
                println!("verdict:   NOT OK: {e}");
                return Ok(1);
            }
        },
        None => DaemonConfig::default(),
    };
    let setup = Setup {
        sandbox: SandboxConfig {
            mode: args.sandbox.unwrap_or(cfg.sandbox.mode),
            ..cfg.sandbox.clone()
        },
        cfg,
        deep: args.deep,
    };
    if args.project.is_empty() {
        let base = command.clone();
        let project = tokio::task::spawn_blocking(move || {
            leanpool_lean::project::Project::from_backend("default", base)
        })
        .await?;
        report(&project, &setup, &mut problems).await;
    }
    for p in &args.project {
        let base = command.clone();
        let spec = leanpool_lean::project::ProjectSpec::parse(p)?;
        println!("project:   {} ({})", spec.name, p);
        let resolved = tokio::task::spawn_blocking(move || {
            leanpool_lean::project::Project::resolve(&spec, &base)
        })
        .await?;
        match resolved {
            Ok(project) => report(&project, &setup, &mut problems).await,
            Err(e) => {
                println!("  NOT SERVABLE: {e}");
                problems.push(e.to_string());
            }
        }
    }
    if problems.is_empty() {
        let what = if args.deep {
            "a worker checked a theorem"
        } else {
            "run with --deep to start a worker"
        };
        println!("verdict:   OK ({what})");
        Ok(0)
    } else {
        println!("verdict:   NOT OK: {}", problems.join("; "));
        Ok(1)
    }
}

/// What every project's report reads: the config, the sandbox asked for
/// (the config's with `--sandbox`'s mode) and `--deep`.
struct Setup {
    cfg: DaemonConfig,
    sandbox: SandboxConfig,
    deep: bool,
}

/// The report on one project's Lean: program, version, LEAN_PATH,
/// library, sandbox, worker limits, axiom policy, and with `--deep` a
/// checked theorem.
async fn report(
    project: &leanpool_lean::project::Project,
    setup: &Setup,
    problems: &mut Vec<String>,
) {
    report_lean(project, &setup.cfg, problems).await;
    report_sandbox(&project.command, &setup.sandbox, problems);
    report_policies(&project.command, &setup.cfg);
    if setup.deep && problems.is_empty() {
        deep_check(&project.command, setup, problems).await;
    }
}

/// Which Lean: backend, program, version, LEAN_PATH, library identity.
async fn report_lean(
    project: &leanpool_lean::project::Project,
    cfg: &DaemonConfig,
    problems: &mut Vec<String>,
) {
    let command = &project.command;
    println!(
        "backend:   {} (from {})",
        command.backend.as_str(),
        command.source
    );
    let mut program = command.program.display().to_string();
    for a in &command.args {
        program.push(' ');
        program.push_str(a);
    }
    println!("program:   {program}");
    if !is_executable(&command.program) {
        problems.push(format!(
            "{} is not an executable file",
            command.program.display()
        ));
    }
    let start_timeout = Duration::from_millis(cfg.pool.start_timeout_ms);
    match command.version(start_timeout).await {
        Ok(v) => {
            let how = if command.version.is_some() {
                "recorded at set-up"
            } else {
                "from --version"
            };
            println!("lean:      {v} ({how})");
        }
        Err(e) => {
            println!("lean:      unknown");
            problems.push(e.to_string());
        }
    }
    match command.lean_path() {
        Some(p) => {
            let has_init = std::env::split_paths(&p).any(|d| d.join("Init.olean").is_file());
            println!(
                "LEAN_PATH: {p}{}",
                if has_init {
                    ""
                } else {
                    " (no Init.olean there)"
                }
            );
            if !has_init {
                problems.push("LEAN_PATH has no Init.olean".into());
            }
        }
        None => println!("LEAN_PATH: (unset; Lean uses its own library)"),
    }
    // Provenance (what `status` reports too): the library's identity.
    match &project.library {
        Ok(l) => println!("library:   {}", super::status::library(l)),
        Err(e) => {
            println!("library:   unknown");
            problems.push(format!("cannot identify the library: {e}"));
        }
    }
}

/// The sandbox asked for, as planned for `command`: what it allows, or
/// why it cannot be had.
fn report_sandbox(command: &LeanCommand, sandbox: &SandboxConfig, problems: &mut Vec<String>) {
    match Plan::new(command, sandbox) {
        Ok(plan) => {
            println!("sandbox:   {}", plan.summary());
            if plan.mode != SandboxMode::Off {
                let list = |v: &[std::path::PathBuf]| {
                    v.iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(" ")
                };
                println!("  read+exec: {}", list(&plan.read_exec));
                println!("  read:      {}", list(&plan.read));
                println!("  devices:   {}", list(&plan.devices));
                println!("  write:     a private dir per worker ($TMPDIR/leanpool-worker-*); no sockets, no signals out");
            }
        }
        Err(e) => {
            println!(
                "sandbox:   {} (Landlock ABI {}): unavailable",
                sandbox.mode.as_str(),
                landlock_abi()
            );
            problems.push(e.to_string());
        }
    }
}

/// The config's worker limits and `[verdict]` axiom policy.
fn report_policies(command: &LeanCommand, cfg: &DaemonConfig) {
    println!("workers:   {}", worker_limits(&cfg.pool));
    let policy = &cfg.verdict;
    let unlisted = policy.unlisted_axioms.resolve(command.backend);
    println!(
        "axioms:    ok/proved may rest on {}; unlisted axioms: {} ([verdict] policy{})",
        policy.allowed_axioms.join(", "),
        unlisted.as_str(),
        if command.backend == leanpool_lean::BackendKind::Wasm {
            "; this WASM build runs documents as modules, where Lean refuses `#print axioms`"
        } else {
            ""
        }
    );
}

/// `--deep`: start a worker as the config's `[pool]` starts one (no
/// warm-up), under the sandbox asked for, and check a theorem within
/// `[pool] default_timeout_ms`.
async fn deep_check(command: &LeanCommand, setup: &Setup, problems: &mut Vec<String>) {
    let started = Instant::now();
    let params = CheckParams::new(DEEP_TEXT);
    let worker = WorkerConfig {
        warmup: None,
        ..setup
            .cfg
            .pool
            .worker_config(command.clone(), &setup.sandbox)
    };
    let limit = Duration::from_millis(setup.cfg.pool.default_timeout_ms);
    match check_once(&worker, &params, limit).await {
        Ok(r) if r.status == CheckStatus::Ok => {
            println!(
                "deep:      `{}` ok in {:.1} s (start + check)",
                DEEP_TEXT.trim(),
                started.elapsed().as_secs_f64()
            )
        }
        Ok(r) => problems.push(format!(
            "deep check gave {:?}: {:?}",
            r.status, r.diagnostics
        )),
        Err(e) => problems.push(format!("deep check failed: {e}")),
    }
}

/// The worker limits a daemon with `pool` would start with on this
/// machine (before any worker is measured), as `status` prints them.
fn worker_limits(pool: &leanpool_pool::PoolConfig) -> String {
    use leanpool_pool::sizing;
    let l = sizing::size(pool, Default::default(), sizing::Machine::probe(), None);
    super::status::limits(&l)
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}
