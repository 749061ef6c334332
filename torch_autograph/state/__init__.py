"""State that graphs read and update at every call: Variable, GradientTape, TensorArray, optimizers."""

from .captures import global_names, users_function, watch_captures
from .effects_at_raise import Checkpoints, apply_at_raise
from .module_guards import ModuleStructure, module_structure, roots_of
from .python_state import (
    ObjectWatch,
    StateEffectError,
    StateEffects,
    object_kind,
    plan_effects,
    returned_objects,
)
from .state_reads import ReadPlan, StateReads, plan_reads
from .tape import GradientTape, UnconnectedGradients
from .tensor_array import (
    TensorArray,
    ta_concat,
    ta_from_tensor,
    ta_gather,
    ta_new,
    ta_read,
    ta_size,
    ta_stack,
    ta_write,
)
from .variables import (
    Variable,
    assign,
    assign_add,
    assign_add_index,
    assign_index,
    assign_sub,
    assign_sub_index,
    creation_rules,
    init_scope,
)

__all__ = ["Checkpoints", "GradientTape", "ModuleStructure", "ReadPlan", "StateEffectError", "StateEffects", "StateReads",
           "TensorArray", "UnconnectedGradients", "Variable", "ObjectWatch", "apply_at_raise", "assign", "assign_add", "assign_add_index",
           "assign_index", "assign_sub", "assign_sub_index", "creation_rules", "global_names", "init_scope",
           "module_structure", "object_kind", "plan_effects", "plan_reads", "returned_objects", "roots_of", "ta_concat",
           "ta_from_tensor", "ta_gather", "ta_new", "ta_read", "ta_size", "ta_stack", "ta_write", "users_function",
           "watch_captures"]
