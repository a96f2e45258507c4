set_option maxHeartbeats 0
open Nat
set_option pp.all true

theorem a1 (n : Nat) : succ n ≠ 0 := by simp
theorem a2 : 2 + 2 = 5 := by decide
#check fun n => succ n
