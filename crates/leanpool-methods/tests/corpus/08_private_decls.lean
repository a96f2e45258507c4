namespace Baz
private def a : Nat := 1
private theorem a_eq : a = 1 := rfl
private def b : Nat := a + "x"
theorem uses_private : a = 2 := rfl
end Baz
#check Baz.a
#print Baz.a
example : Baz.a = 1 := Baz.a_eq
