theorem last_line_error : (3 : Nat) = 4 := by
  decide