def idd {α : Type} (a : α) : α := a
example : idd 3 = 3 := rfl
example : idd (α := Nat) "x" = "x" := rfl
def needs (f : {n : Nat} → n = n) : Nat := 0
example := needs rfl
example := idd
