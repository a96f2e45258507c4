theorem no_type := rfl
theorem prop_not_type (n : Nat) : n := rfl
theorem wrong_universe : Type := Nat
theorem dup : True := trivial
theorem dup : True := trivial
def Nat.add := 5
