-- astral letters take two UTF-16 units each: 𝓝 𝔽 𝕜 𝒞
def 𝔽 : Nat := 3
def 𝕜𝒞 : Nat := 𝔽 + "𝓝"
theorem t𝓝 : 𝔽 = 4 := rfl
example : (𝔽 : Nat) = 3 := rfl
/- 𝓝𝓝𝓝 -/ theorem after_astral_comment : (2 : Nat) = 3 := rfl
def s : String := "𝓝𝔽" ++ 5
