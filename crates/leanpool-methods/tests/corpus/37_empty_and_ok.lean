-- nothing wrong here
theorem ok1 (a b : Nat) : a + b = b + a := Nat.add_comm a b
theorem ok2 : [1, 2, 3].length = 3 := rfl
def ok3 (xs : List Nat) : Nat := xs.foldr (· + ·) 0
example : ok3 [1, 2, 3] = 6 := by decide
