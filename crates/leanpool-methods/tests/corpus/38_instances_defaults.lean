instance : OfNat Bool 0 := ⟨false⟩
example : (0 : Bool) = false := rfl
example : (1 : Bool) = true := rfl
def d : Inhabited (Nat → Empty) := inferInstance
