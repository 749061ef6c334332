"""The runtime that generated code calls as `ag__.<name>` (no torch here)."""

from torch_autograph.autograph.operators.control_flow import (
    check_branch_outputs,
    for_stmt,
    if_exp,
    if_stmt,
    is_plain,
    loop_var_error,
    plain_iter,
    undefined_names,
    while_stmt,
)
from torch_autograph.autograph.operators.dispatch import StagingBackend, current_backend, is_staged, register_backend
from torch_autograph.autograph.operators.exceptions import let_library_errors_through, try_begin, try_end
from torch_autograph.autograph.operators.lists import (
    get_item,
    list_append,
    list_delitem,
    list_extend,
    list_iadd,
    list_insert,
    list_pop,
    list_popped,
    new_list,
)
from torch_autograph.autograph.operators.logical import and_, assert_stmt, in_, not_, or_
from torch_autograph.autograph.operators.py_builtins import (
    BUILTIN_OVERLOADS,
    LazyEnumerate,
    LazyIterable,
    LazyRange,
    LazyZip,
    abs_,
    all_,
    any_,
    bool_,
    enumerate_,
    float_,
    int_,
    isinstance_,
    len_,
    max_,
    min_,
    range_,
    sorted_,
    sum_,
    type_,
    zip_,
)
from torch_autograph.autograph.operators.variables import (
    Undefined,
    UndefinedReturnValue,
    is_undefined,
    ld,
    ld_attr,
    ld_item,
    retval,
    st_attr,
    st_item,
)

__all__ = [
    "StagingBackend", "register_backend", "current_backend", "is_staged",
    "is_plain", "plain_iter", "try_begin", "try_end", "let_library_errors_through", "if_stmt", "if_exp", "while_stmt", "for_stmt", "check_branch_outputs", "undefined_names",
    "loop_var_error", "and_", "or_", "not_", "in_", "assert_stmt", "list_append", "list_pop", "list_extend",
    "list_iadd", "new_list", "list_popped", "list_insert", "list_delitem", "get_item",
    "Undefined", "UndefinedReturnValue", "is_undefined", "ld", "retval",
    "ld_attr", "st_attr", "ld_item", "st_item",
    "LazyIterable", "LazyRange", "LazyEnumerate", "LazyZip", "BUILTIN_OVERLOADS",
    "len_", "int_", "float_", "bool_", "abs_", "min_", "max_", "sum_", "any_", "all_", "sorted_",
    "isinstance_", "type_", "range_", "enumerate_", "zip_",
]
