namespace Foo
protected def size : Nat := 5
def user : Nat := size
def user2 : Nat := Foo.size
protected theorem size_eq : Foo.size = 5 := rfl
end Foo
open Foo in
example : size = 5 := rfl
open Foo in
example : Foo.size = 6 := Foo.size_eq
