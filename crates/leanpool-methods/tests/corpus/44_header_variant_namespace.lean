-- Same (no) imports as every other file here, other header commands:
-- a worker keyed by imports serves it, the commands travel with the text.
open List in
theorem pre : ([] : List Nat).length = 0 := rfl
universe u
set_option checkBinderAnnotations false
namespace Foo
variable (α : Type u)
theorem b1 : ([] : List α).map id = [] := rfl
theorem b2 : β = β := rfl
#check @b1
end Foo
