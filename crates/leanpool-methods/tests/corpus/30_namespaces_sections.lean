namespace A.B
def v : Nat := 1
section S
variable (n : Nat)
def addN := n + v
theorem addN_eq : addN 2 = 3 := rfl
end S
end A.B
namespace C
def w := A.B.v + 1
end D
section
end
end C
