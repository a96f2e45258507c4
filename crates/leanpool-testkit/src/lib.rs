//! Test support shared by leanpool's crates: a dev-dependency only, never
//! part of a library's API (`publish = false`).
//!
//! - [`answers`]: reading answers in asserts (a check's messages).
//! - [`daemon`]: the one daemon fixture of the tests and benches (the
//!   `leanpool serve` process, or `leanpool_daemon::serve` in-process).
//! - [`data`]: where the shared test data lives (the GTED paper's miniF2F
//!   set), one locator for the gted tests and bench, the guard's corpus
//!   test and the CLI tests, instead of a copy each (it used to be
//!   `leanpool_gted::data`, a test-data path in a public library API).
//! - [`fake_lean`]: the one scripted fake Lean worker, for faults real Lean
//!   cannot produce on demand (the driver's, the pool's and the daemon's
//!   lease tests use it; everything about Lean itself runs on real Lean).
//! - [`harness`]: the runner and setup of the test binaries that are also
//!   the fake (`harness = false`): per-test temp dir and fake command, the
//!   fake pool's base config (features `lean`, `pool`).
//! - [`poll`]: waiting, with a bound, for a condition polled.
//! - [`procs`]: a test process's worker processes in `/proc`.
//! - `workers` (feature `pool`): a pool's workers of one header as its status shows them
//!   (feature `pool`).
//!
//! The `fake-lean` executable (`src/bin/fake-lean.rs`) is [`fake_lean`]
//! alone, for the Python tests that point a daemon at the fake.

#![deny(missing_docs)]

pub mod answers;
pub mod daemon;
pub mod data;
pub mod fake_lean;
pub mod harness;
pub mod poll;
pub mod procs;
#[cfg(feature = "pool")]
pub mod workers;
