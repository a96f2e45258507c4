/- a block comment before the header
   spanning lines: 𝓝 -/
import Nonexistent.Module   

-- body
open Nonexistent in
def x : Nat := "not a nat"
