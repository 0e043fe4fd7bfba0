"""The enums and ``type=`` callables of the `megatron-slime` profile, rebuilt from Megatron-LM.

argparse calls each callable with one command-line string. Each behaves as its Megatron-LM
original (``megatron/training/arguments.py``, ``argument_utils.py``): the same result, the same
exception type, the same ``__name__`` (argparse reports a `ValueError` or `TypeError` as
``invalid <__name__> value: 'x'``, and lets every other exception through, as Megatron's do).

The enums live here, once, so that parsed values pickle by reference to remote workers. They are
not Megatron's classes: ``AttnBackend.flash`` here is not equal to Megatron's
``megatron.core.transformer.enums.AttnBackend.flash``; convert by ``.name`` when handing a
namespace to Megatron code.
"""

from __future__ import annotations

import enum
import json
import re
import signal
import types
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

__all__ = [
    "ENUMS",
    "TYPES",
    "VALUE_TYPES",
    "AttnBackend",
    "CudaGraphModule",
    "la_freq_type",
    "moe_freq_type",
    "no_rope_freq_type",
    "tuple_type",
]


class AttnBackend(enum.Enum):
    """The attention backend (``--attention-backend``), as Megatron-LM's enum of that name."""

    flash = 1
    fused = 2
    unfused = 3
    local = 4
    auto = 5


class CudaGraphModule(enum.Enum):
    """A per-layer CUDA graph capture region (``--cuda-graph-modules``), as Megatron-LM's."""

    attn = 1
    mlp = 2
    moe = 3
    moe_router = 4
    moe_preprocess = 5
    mamba = 6


_E = TypeVar("_E", bound=enum.Enum)


def _enum_type_handler(enum_type: type[_E]) -> Callable[[str], _E]:
    """Megatron's ``ArgumentGroupFactory._get_enum_kwargs`` closure: a member's NAME -> the member.

    An unknown name raises `KeyError`, which argparse does not catch: the real parser stops
    with a traceback instead of a usage error, and so does this one.
    """

    def enum_type_handler(cli_arg: str) -> _E:
        return enum_type[cli_arg]

    return enum_type_handler


# Megatron builds these closures once per parser; sharing one per enum changes nothing visible.
_attn_backend_handler = _enum_type_handler(AttnBackend)
_signal_handler = _enum_type_handler(signal.Signals)

# Megatron checks a pattern against this set of characters before it calls eval(): digits,
# commas, brackets, parentheses, + and *. No name can be written with them, so eval() sees
# only literals and operators; a pattern that passes the check but is not valid Python raises
# SyntaxError, which argparse does not catch (as in Megatron).
_NOT_PATTERN = re.compile(r"[^,\d\[\]\(\)\+\*]")


def _eval_pattern(pattern: str) -> Any:
    """Validate and evaluate a list expression such as ``([1]*3+[0])*2``."""
    assert isinstance(pattern, str)
    if _NOT_PATTERN.search(pattern):
        raise ValueError(f"Invalid pattern: {pattern}")
    return eval(pattern, {"__builtins__": {}})


def _freq(x: int | str) -> Any:
    """An int N (int or string) or a list pattern such as ``([0]*3+[1])*3``."""
    if isinstance(x, int):
        return x
    assert isinstance(x, str)
    if "[" in x:
        return _eval_pattern(x)
    return int(x)


# Three names, as in Megatron: argparse quotes a type's __name__ in its error messages.
def no_rope_freq_type(x: int | str | None) -> Any:
    """``--no-rope-freq``: None, an int N or a list pattern."""
    return None if x is None else _freq(x)


def moe_freq_type(x: int | str) -> Any:
    """``--moe-layer-freq``, ``--window-attn-skip-freq``: an int N or a list pattern."""
    return _freq(x)


def la_freq_type(x: int | str | None) -> Any:
    """``--linear-attention-freq``: None, an int N or a list pattern."""
    return None if x is None else _freq(x)


def tuple_type(x: tuple[int, ...] | str | None) -> tuple[int, ...] | None:
    """``--window-size``: ``"1,2"`` or ``"(1,2)"`` -> ``(1, 2)``."""
    if x is None or isinstance(x, tuple):
        return x
    assert isinstance(x, str)
    return tuple(int(i) for i in x.strip("()").split(","))


# Deprecated spellings that Megatron keeps as strings for validate_args to migrate.
_CUDA_GRAPH_PASSTHROUGH = frozenset({"full", "full_iteration", "full_iteration_inference"})


def _parse_cuda_graph_modules_arg(scope: str) -> CudaGraphModule | str:
    """``--cuda-graph-modules``: a `CudaGraphModule` name -> the member; deprecated names stay.

    An unknown name raises `KeyError`, which argparse does not catch (as in Megatron).
    """
    if scope in _CUDA_GRAPH_PASSTHROUGH:
        return scope
    return CudaGraphModule[scope]


# The profile's data names its types with these keys; int, str, float and bool are built in.
TYPES: Mapping[str, Callable[[str], Any]] = types.MappingProxyType(
    {
        "loads": json.loads,
        "enum_type_handler:AttnBackend": _attn_backend_handler,
        "enum_type_handler:Signals": _signal_handler,
        "tuple_type": tuple_type,
        "moe_freq_type": moe_freq_type,
        "no_rope_freq_type": no_rope_freq_type,
        "la_freq_type": la_freq_type,
        "_parse_cuda_graph_modules_arg": _parse_cuda_graph_modules_arg,
    }
)

# The enums whose members the profile's data uses as defaults and choices, by class name.
ENUMS: Mapping[str, type[enum.Enum]] = types.MappingProxyType(
    {"AttnBackend": AttnBackend, "Signals": signal.Signals}
)

#: Every enum class this profile's parser can produce (its data's and its type callables'):
#: what audit records of it may hold, and rebuild (`layerconf.audits.ValueTypes`).
VALUE_TYPES: tuple[type[enum.Enum], ...] = (AttnBackend, CudaGraphModule, signal.Signals)
