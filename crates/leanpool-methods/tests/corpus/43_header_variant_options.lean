set_option maxHeartbeats 0
open Nat
set_option maxRecDepth 2000

theorem a1 (n : Nat) : succ n ≠ 0 := by simp
theorem a2 : 2 + 2 = 5 := by decide
#check fun n => succ n
