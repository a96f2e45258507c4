def a : Nat := undefinedThing
theorem b : Nat.foo_bar = 1 := rfl
def c : List Nat := List.mapp (· + 1) [1, 2]
example : x = x := rfl
open Nat in
theorem d : succ_le_succ_iff_nope := trivial
