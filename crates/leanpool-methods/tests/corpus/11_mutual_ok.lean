mutual
def isEven : Nat → Bool
  | 0 => true
  | n + 1 => isOdd n
def isOdd : Nat → Bool
  | 0 => false
  | n + 1 => isEven n
end
theorem even4 : isEven 4 = true := by decide
theorem odd4 : isOdd 4 = true := by decide
