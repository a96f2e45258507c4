theorem crlf_ok : 1 + 1 = 2 := rfl
theorem crlf_bad : 1 + 1 = 3 := rfl
def crlf_multi (x : Nat) : Nat := do
  let y := x
  y + "s"
