//! `leanpool doctor`: which Lean leanpool would run, and does it work.

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
    /// The daemon config whose worker limits to report (default: none,
    /// i.e. sized to this machine).
    #[arg(long, value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
    /// The sandbox mode to report on (and use for --deep): required,
    /// best-effort or off. The daemon's is `[sandbox] mode` in its config.
    #[arg(long, value_name = "MODE", default_value_t = leanpool_daemon::DaemonConfig::default().sandbox.mode)]
    pub sandbox: SandboxMode,
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
    if args.project.is_empty() {
        let base = command.clone();
        let project = tokio::task::spawn_blocking(move || {
            leanpool_lean::project::Project::from_backend("default", base)
        })
        .await?;
        report(&project, &args, &mut problems).await;
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
            Ok(project) => report(&project, &args, &mut problems).await,
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

/// The report on one project's Lean: program, version, LEAN_PATH,
/// library, sandbox, worker limits, axiom policy, and with `--deep` a
/// checked theorem.
async fn report(
    project: &leanpool_lean::project::Project,
    args: &Args,
    problems: &mut Vec<String>,
) {
    report_lean(project, problems).await;
    let sandbox = report_sandbox(&project.command, args, problems);
    report_policies(&project.command, args, problems);
    if args.deep && problems.is_empty() {
        deep_check(&project.command, sandbox, problems).await;
    }
}

/// Which Lean: backend, program, version, LEAN_PATH, library identity.
async fn report_lean(project: &leanpool_lean::project::Project, problems: &mut Vec<String>) {
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
    match command.version(leanpool_lean::DEFAULT_START_TIMEOUT).await {
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

/// The sandbox `--sandbox` asks for, as planned for `command`: what it
/// allows, or why it cannot be had.
fn report_sandbox(command: &LeanCommand, args: &Args, problems: &mut Vec<String>) -> SandboxConfig {
    let sandbox = SandboxConfig {
        mode: args.sandbox,
        ..SandboxConfig::default()
    };
    match Plan::new(command, &sandbox) {
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
                args.sandbox.as_str(),
                landlock_abi()
            );
            problems.push(e.to_string());
        }
    }
    sandbox
}

/// The worker limits (of `--config`, else the default's) and the axiom
/// policy.
fn report_policies(command: &LeanCommand, args: &Args, problems: &mut Vec<String>) {
    match &args.config {
        Some(p) => match leanpool_daemon::DaemonConfig::load(p) {
            Ok(c) => println!("workers:   {}", worker_limits(&c.pool)),
            Err(e) => problems.push(e.to_string()),
        },
        None => println!(
            "workers:   {}",
            worker_limits(&leanpool_daemon::DaemonConfig::default().pool)
        ),
    }
    let policy = leanpool_methods::verdict::VerdictPolicy::default();
    let unlisted = policy.unlisted_axioms.resolve(command.backend);
    println!(
        "axioms:    ok/proved may rest on {}; unlisted axioms: {} (default [verdict] policy{})",
        policy.allowed_axioms.join(", "),
        unlisted.as_str(),
        if command.backend == leanpool_lean::BackendKind::Wasm {
            "; this WASM build runs documents as modules, where Lean refuses `#print axioms`"
        } else {
            ""
        }
    );
}

/// `--deep`: start a worker under `sandbox` and check a theorem.
async fn deep_check(command: &LeanCommand, sandbox: SandboxConfig, problems: &mut Vec<String>) {
    let started = Instant::now();
    let params = CheckParams::new(DEEP_TEXT);
    let mut cfg = WorkerConfig::new(command.clone());
    cfg.sandbox = sandbox;
    match check_once(&cfg, &params, Duration::from_secs(120)).await {
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
