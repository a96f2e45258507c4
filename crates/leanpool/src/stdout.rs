//! Standard output that a closed pipe cannot turn into a panic.
//!
//! `std`'s `print!`/`println!` panic when stdout is a pipe whose reader has
//! gone (`leanpool opt FILE | head -c 100`): Rust ignores `SIGPIPE`, so the
//! write fails with `EPIPE`. Like `rg`, every subcommand instead stops
//! quietly; unlike `rg` it does not claim success: it exits with
//! [`CLOSED_STDOUT`] (128 + `SIGPIPE`, what a shell shows for a process that
//! `SIGPIPE` killed), so `set -o pipefail` never reads a cut-off `check` as
//! a pass. `SIGPIPE` itself stays ignored: the daemon and the clients write
//! to sockets and to Lean's stdin, where a closed peer is an error to
//! handle, not a reason to die.
//!
//! The `print!`/`println!` macros defined here shadow `std`'s in the whole
//! binary (they are declared before every other module), so a subcommand
//! prints as usual and cannot forget the rule.

use std::fmt;
use std::io::{self, Write};

/// Exit status when stdout was closed before everything was written.
pub const CLOSED_STDOUT: i32 = 141;

/// Writes to stdout and flushes; on a closed stdout exits quietly with
/// [`CLOSED_STDOUT`]; any other write error ends the process with a
/// one-line message and status 2 (the code of leanpool's own errors).
pub fn write(args: fmt::Arguments<'_>) {
    let mut out = io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.flush()) {
        fail(e);
    }
}

/// Flushes stdout before the process exits, with [`write()`]'s rule.
pub fn flush() {
    if let Err(e) = io::stdout().lock().flush() {
        fail(e);
    }
}

fn fail(e: io::Error) -> ! {
    if e.kind() == io::ErrorKind::BrokenPipe {
        std::process::exit(CLOSED_STDOUT);
    }
    eprintln!("leanpool: writing to stdout: {e}");
    std::process::exit(2);
}

/// `std::print!` with [`write()`]'s rule for a closed stdout.
macro_rules! print {
    ($($arg:tt)*) => { $crate::stdout::write(format_args!($($arg)*)) };
}

/// `std::println!` with [`write()`]'s rule for a closed stdout.
macro_rules! println {
    () => { $crate::stdout::write(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::stdout::write(format_args!("{}\n", format_args!($($arg)*))) };
}
