def myAdd (a b : Nat) : Nat := a + b
infixl:65 " +++ " => myAdd
example : 1 +++ 2 = 3 := rfl
example : 1 +++ 2 = 4 := rfl
notation "‖" x "‖" => x + 100
example : ‖1‖ = 101 := rfl
example : ‖𝟙‖ = 0 := rfl
