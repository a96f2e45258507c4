//! `leanpool`: one thin binary, CLI and daemon.
//!
//! Each subcommand lives in `cmd/<name>.rs` with its own clap `Args` and a
//! `run` function returning the process exit code; this file only routes.

// First: its `print!`/`println!` shadow std's in every module below.
#[macro_use]
mod stdout;
mod cmd;
#[cfg(test)]
mod docs_agree;

use clap::{Parser, Subcommand};

/// The exit codes, shown by `--help` (README.md has the same table; the
/// test `docs_agree::exit_codes_are_the_readmes` keeps them so).
const EXIT_CODES: &str = "\
Exit codes:
  0    done; check: status ok; verify: proved; equiv: equivalent;
       normalize/opt: ok or sorry; doctor: verdict OK; batch, gted pairs:
       every line answered (per-item errors included); lsp: exit after
       shutdown
  1    check: any other status (error, sorry, timeout, rejected);
       verify: not proved; equiv: not equivalent; normalize/opt: not
       ok/sorry; doctor: NOT OK; lsp: exit without shutdown, or stdin
       closed first
  2    leanpool could not do the work (bad arguments, unreadable file,
       no daemon at --socket, no Lean, a daemon error); equiv: unknown
  3    batch, gted pairs: the daemon went away mid-run; rerun the same
       command to resume
  141  stdout was closed before everything was written (e.g. `leanpool
       opt F | head -c 100`): leanpool stops quietly, never with 0";

#[derive(Parser)]
#[command(
    name = "leanpool",
    version,
    about = "A pool of warm Lean 4 processes serving check / verify / normalize / opt / gted",
    after_help = EXIT_CODES
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the Lean backend in use, its version and library path, and a verdict.
    Doctor(cmd::doctor::Args),
    /// Check that a Lean file elaborates (locally, or through a daemon with --socket).
    #[command(
        after_help = "Exit: 0 status ok; 1 any other status (sorry included); 2 leanpool error; 141 stdout closed."
    )]
    Check(cmd::check::Args),
    /// Judge a proof against a fixed statement: `proved` only if the theorem
    /// exists with exactly the statement's type, without sorry or new axioms.
    Verify(cmd::verify::Args),
    /// Are two statements equivalent? Answered only with a Lean-checked
    /// proof either way (else `unknown`). Exit: 0 equivalent; 1 not
    /// equivalent; 2 anything else.
    Equiv(cmd::equiv::Args),
    /// Print a statement as Lean elaborated it.
    #[command(
        after_help = "Exit: 0 status ok or sorry; 1 any other status; 2 leanpool error; 141 stdout closed."
    )]
    Normalize(cmd::normalize::Args),
    /// Print a statement's operator tree.
    #[command(
        after_help = "Exit: 0 status ok or sorry; 1 any other status; 2 leanpool error; 141 stdout closed."
    )]
    Opt(cmd::opt::Args),
    /// Tree edit distance similarity of operator trees (no Lean needed).
    #[command(subcommand)]
    Gted(cmd::gted::Command),
    /// Run the daemon on a Unix socket.
    Serve(cmd::serve::Args),
    /// Ask a running daemon for its pool status.
    Status(cmd::status::Args),
    /// Send a JSONL file of statements through a daemon.
    ///
    /// Input lines: the method's params plus `"id"`, e.g. `{"id", "text"}`;
    /// `{"id", "header", "statement"}` stands for `text`.
    Batch(cmd::batch::Args),
    /// The daemon's result cache: `stats` (a running daemon's counters, or
    /// a stopped daemon's store), `clear` (daemon stopped).
    #[command(subcommand)]
    Cache(cmd::cache::Command),
    /// Language Server for editors on stdin/stdout, documents served by warm workers.
    Lsp(cmd::lsp::Args),
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
            Command::Verify(a) => cmd::verify::run(a).await,
            Command::Equiv(a) => cmd::equiv::run(a).await,
            Command::Normalize(a) => cmd::normalize::run(a).await,
            Command::Opt(a) => cmd::opt::run(a).await,
            Command::Gted(c) => cmd::gted::run(c).await,
            Command::Serve(a) => cmd::serve::run(a).await,
            Command::Status(a) => cmd::status::run(a).await,
            Command::Batch(a) => cmd::batch::run(a).await,
            Command::Cache(c) => cmd::cache::run(c).await,
            Command::Lsp(a) => cmd::lsp::run(a).await,
        };
        match r {
            Ok(code) => code,
            Err(e) => {
                eprintln!("leanpool: {e:#}");
                2
            }
        }
    });
    stdout::flush();
    std::process::exit(code);
}
