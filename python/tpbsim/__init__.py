"""tpbsim: run NeuronCore kernel NEFFs on the tpbsim machine model from numpy.

The work is done by the Rust library (``tpbsim._native``); this module holds the exception
classes and the result wrapper only.
"""

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import ml_dtypes  # noqa: F401  (registers bfloat16, float8_* with numpy)


class TpbsimError(Exception):
    """Base class of every tpbsim error."""


class NeffError(TpbsimError):
    """The NEFF could not be read or does not describe a loadable kernel."""


class SimulationFault(TpbsimError):
    """The simulation stopped on a fault.

    ``engine`` (short name), ``bundle_index`` and ``byte_offset`` (into the engine's
    instruction stream) are None when the fault has no single site (deadlock, budgets).
    """

    def __init__(self, message, kind, engine, bundle_index, byte_offset, schedule):
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.engine = engine
        self.bundle_index = bundle_index
        self.byte_offset = byte_offset
        self.schedule = schedule


class Deadlock(SimulationFault):
    """Every unfinished engine waits on a condition no other engine can satisfy."""


class OutOfBounds(SimulationFault):
    """An operand's access pattern leaves its memory."""


class InvalidBundle(SimulationFault):
    """A bundle fails decoding or L2 validation."""


class NotSimulated(SimulationFault):
    """No value model exists for an opcode on its engine."""


class StepBudgetExhausted(SimulationFault):
    """The step budget ran out (a runaway loop)."""


class BudgetExceeded(SimulationFault):
    """A memory or DMA budget would be exceeded."""


class ExecutionError(SimulationFault):
    """Any other execution error at a bundle."""


@dataclass
class Result:
    """The outputs (numpy arrays by name), counters and findings of a run."""

    outputs: Dict[str, Any]
    stats: Dict[str, Any]
    findings: List[Dict[str, Any]]
    schedule_diffs: List[Dict[str, Any]] = field(default_factory=list)
    arch: Optional[str] = None


from . import _native  # noqa: E402


def run(neff, inputs=None, *, arch=None, check_races=False, schedules=1, max_steps=None):
    """Run a kernel NEFF (a path or bytes) with ``inputs`` ({name: ndarray}; inputs not
    given take the NEFF's own data). Returns a :class:`Result`; raises a
    :class:`SimulationFault` subclass on a fault and :class:`NeffError` on a bad NEFF."""
    if isinstance(neff, (bytearray, memoryview)):
        neff = bytes(neff)
    r = _native.run(
        neff,
        inputs,
        arch=arch,
        check_races=check_races,
        schedules=schedules,
        max_steps=max_steps,
    )
    return Result(**r)


__all__ = [
    "TpbsimError",
    "NeffError",
    "SimulationFault",
    "Deadlock",
    "OutOfBounds",
    "InvalidBundle",
    "NotSimulated",
    "StepBudgetExhausted",
    "BudgetExceeded",
    "ExecutionError",
    "Result",
    "run",
]
