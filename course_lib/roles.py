"""Which parameter of a student's module plays which role of the reference's: one rule, used by the
grader and by the notebooks' checks alike.

The grader replays every call of a module's method on a freshly built student module into which it
has copied the reference's parameters at the time of the call
(``course_tools.grading.sandboxed.replay``). So it must pair each reference parameter with one of the
student's: :func:`match_parameters` is that pairing. Where a contract leaves the parameters' names
free, the pairing decides whether the student's code is graded with the weights it was meant to get;
:func:`check_parameter_roles` runs the same pairing in a visible check, so that Validate says what
the grade would otherwise find out alone.
"""
from __future__ import annotations

from typing import Mapping

import torch
from torch import nn

from course_lib.grading import check

RULE = ("the grader gives your module the reference's weights at every call, pairing the parameters "
        "by name, then by a shape that only one unpaired parameter has, then in the order they are created")


def match_parameters(own: Mapping[str, torch.Tensor], wanted: Mapping[str, torch.Tensor]) -> dict[str, str]:
    """Reference parameter name -> the name of the module's parameter in the same role (see :data:`RULE`).

    Raises ``AttributeError`` where the two sets of parameters cannot be paired one to one.
    """
    mapping = {k: k for k in wanted if k in own and own[k].shape == wanted[k].shape}
    left_own = [k for k in own if k not in mapping]
    left_wanted = [k for k in wanted if k not in mapping]
    for key in list(left_wanted):
        same = [k for k in left_own if own[k].shape == wanted[key].shape]
        if len(same) == 1 and sum(wanted[w].shape == wanted[key].shape for w in left_wanted) == 1:
            mapping[key] = same[0]
            left_own.remove(same[0])
            left_wanted.remove(key)
    if [tuple(own[k].shape) for k in left_own] == [tuple(wanted[k].shape) for k in left_wanted]:
        mapping.update(zip(left_wanted, left_own))
        return mapping
    raise AttributeError(
        f"left unpaired, yours: {_shapes(own, left_own)}; the reference's: {_shapes(wanted, left_wanted)} "
        "(build the layers the exercise gives, and no other parameters)"
    )


def _shapes(parameters: Mapping[str, torch.Tensor], names: list[str]) -> str:
    return ", ".join(f"{name} {tuple(parameters[name].shape)}" for name in names) or "none"


def check_parameter_roles(
    exercise: str, module: nn.Module, reference: Mapping[str, torch.Tensor], holding: str | None = None
) -> None:
    """Fail unless the grader can pair ``module``'s parameters with ``reference``'s (name -> tensor,
    in the reference's order of creation); with ``holding`` (what filled the module, e.g.
    ``"after load_from_torch"``), also unless each of the module's parameters holds exactly the
    reference tensor it is paired with."""
    own = dict(module.named_parameters())
    try:
        mapping = match_parameters(own, reference)
    except AttributeError as error:
        check(exercise, False, f"{RULE}; it cannot pair yours: {error}")
        return
    if holding is None:
        return
    for name, own_name in mapping.items():
        check(exercise, torch.equal(own[own_name].detach(), reference[name].detach()),
              f"{RULE}; that pairs your {own_name} with the reference's {name}, but {holding} your "
              f"{own_name} does not hold it: keep the given names, or create the parameters in the "
              "given order")
