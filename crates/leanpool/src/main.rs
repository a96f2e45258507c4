//! `leanpool`: one thin binary, CLI and daemon.
//!
//! Each subcommand lives in `cmd/<name>.rs` with its own clap `Args` and a
//! `run` function returning the process exit code; this file only routes.

mod cmd;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "leanpool", version, about = "A pool of warm Lean 4 processes serving check / normalize / opt / gted")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the Lean backend in use, its version and library path, and a verdict.
    Doctor(cmd::doctor::Args),
    /// Check that a Lean file elaborates (locally, or through a daemon with --socket).
    Check(cmd::check::Args),
    /// Print a statement as Lean elaborated it.
    Normalize(cmd::normalize::Args),
    /// Print a statement's operator tree.
    Opt(cmd::opt::Args),
    /// Tree edit distance similarity of operator trees (no Lean needed).
    #[command(subcommand)]
    Gted(cmd::gted::Command),
    /// Run the daemon on a Unix socket.
    Serve(cmd::serve::Args),
    /// Ask a running daemon for its pool status.
    Status(cmd::status::Args),
    /// Send a JSONL file of statements through a daemon.
    Batch(cmd::batch::Args),
}

fn main() {
    let cli = Cli::parse();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let code = rt.block_on(async move {
        let r = match cli.command {
            Command::Doctor(a) => cmd::doctor::run(a).await,
            Command::Check(a) => cmd::check::run(a).await,
            Command::Normalize(a) => cmd::normalize::run(a).await,
            Command::Opt(a) => cmd::opt::run(a).await,
            Command::Gted(c) => cmd::gted::run(c).await,
            Command::Serve(a) => cmd::serve::run(a).await,
            Command::Status(a) => cmd::status::run(a).await,
            Command::Batch(a) => cmd::batch::run(a).await,
        };
        match r {
            Ok(code) => code,
            Err(e) => {
                eprintln!("leanpool: {e:#}");
                2
            }
        }
    });
    std::process::exit(code);
}
