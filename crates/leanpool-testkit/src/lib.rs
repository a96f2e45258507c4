//! Test support shared by leanpool's crates: a dev-dependency only, never
//! part of a library's API (`publish = false`).
//!
//! - [`data`]: where the shared test data lives (the GTED paper's miniF2F
//!   set), one locator for the gted tests and bench, the guard's corpus
//!   test and the CLI tests, instead of a copy each (it used to be
//!   `leanpool_gted::data`, a test-data path in a public library API).
//!
//! The scripted fake Lean workers (for faults real Lean cannot produce on
//! demand) are still two: `crates/leanpool-lean/tests/fake_lsp.py` and
//! `crates/leanpool-pool/tests/support/fake_peer.rs`; issue 14 part 5
//! asks for them to be one, here.

pub mod data;
