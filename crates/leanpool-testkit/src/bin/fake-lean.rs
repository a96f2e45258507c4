//! The scripted FAKE Lean (`leanpool_testkit::fake_lean`) as an executable
//! of its own, for tests that cannot run a Rust test binary as the worker:
//! the Python package's scale and routing tests (python/tests, issue 22)
//! point a `leanpool serve` at it through a `backend.json` whose `program`
//! is this file. It speaks Lean's file-worker LSP on stdio (the `--worker`
//! flag leanpool appends is ignored) and answers each document after the
//! time its `-- FAKE sleep MS` line says. A test double of Lean, not Lean:
//! nothing measured or checked with it says anything about Lean.

fn main() {
    leanpool_testkit::fake_lean::serve()
}
