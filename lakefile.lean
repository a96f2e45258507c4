import Lake
open Lake DSL

/-!
The native deployment of leanpool: a Lake package whose only job is to pin
the Lean toolchain (`lean-toolchain`, 4.28 family, the same family as the
WASM Lean used in CI: `4.28.0-pre`) and the matching Mathlib, so that
`lake env` gives the `LEAN_PATH` the warm workers are spawned with.

Set-up on a machine with elan:
  lake update && lake exe cache get && lake build LeanpoolSupport
-/

package leanpool where
  leanOptions := #[⟨`autoImplicit, false⟩]

require mathlib from git
  "https://github.com/leanprover-community/mathlib4" @ "v4.28.0"

/-- Optional Lean-side helpers for the native path (see `lean/README.md`).
The WASM build cannot compile new Lean code, so nothing in leanpool depends
on this library being built. -/
lean_lib LeanpoolSupport where
  srcDir := "lean"
