@[deprecated "use `newF` instead" (since := "2024-01-01")]
def oldF : Nat := 1
def newF : Nat := 1
def usesOld : Nat := oldF + 1
theorem unusedHave (n : Nat) : n = n := by
  have _h : n = n := rfl
  exact rfl
set_option maxRecDepth 1000 in
def noisy (x : Nat) : Nat := 0
@[deprecated newF (since := "2024-02-01")]
theorem oldT : True := trivial
example : True := oldT
