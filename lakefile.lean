import Lake
open Lake DSL

/-!
The native deployment of leanpool: a Lake package whose only job is to pin
the Lean toolchain (`lean-toolchain`: 4.28, the same family as the WASM Lean
used in CI, `4.28.0-pre`) and the matching Mathlib (Mathlib tags each
toolchain it supports as `v4.X.Y`), so that `lake env` gives the `LEAN_PATH`
the warm workers are spawned with. leanpool compiles no Lean code of its own.

Set-up on a machine with elan (see `lean/README.md`):
  lake update && lake exe cache get && bash scripts/setup
-/

package leanpool where
  leanOptions := #[⟨`autoImplicit, false⟩]

require mathlib from git
  "https://github.com/leanprover-community/mathlib4" @ "v4.28.0"
