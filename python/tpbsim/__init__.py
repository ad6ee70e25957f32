"""tpbsim: run NeuronCore kernel NEFFs on the tpbsim machine model from numpy.

The work is done by the Rust library (``tpbsim._native``); this module holds the exception
classes and thin wrappers only.
"""

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import ml_dtypes  # noqa: F401  (registers bfloat16, float8_* with numpy)


class TpbsimError(Exception):
    """Base class of every tpbsim error."""


class NeffError(TpbsimError):
    """The NEFF could not be read or does not describe a loadable kernel.

    ``member`` is the archive member at fault (``sg00/def.json``) and ``path`` the JSON path
    inside it (``$.var[2].shape``), each None when the error names none.
    """

    def __init__(self, message, member=None, path=None):
        super().__init__(message)
        self.message = message
        self.member = member
        self.path = path


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
    """The outputs (numpy arrays by name), counters and findings of a run; ``cores`` lists
    each NeuronCore's subgraph and counters (one entry per core of the program).

    A run of several ranks (``ranks`` is set) has one entry per rank in ``outputs``,
    ``stats``, ``cores``, ``findings`` and ``schedule_diffs``: ``result.outputs[r]["y"]`` is
    rank ``r``'s output ``y``, ``result.findings[r]`` its race findings."""

    outputs: Dict[str, Any]
    stats: Dict[str, Any]
    findings: List[Any]
    cores: List[Dict[str, Any]] = field(default_factory=list)
    schedule_diffs: List[Any] = field(default_factory=list)
    arch: Optional[str] = None
    run: Any = field(default=None, repr=False)
    ranks: Optional[int] = None
    collective_order: Optional[str] = None

    def profile(self):
        """The timeline profile of the round-robin run (``sim profile``'s cost model):
        ``makespan_ns``, ``tracks`` (per engine and DMA queue: ``busy_ns``, ``wait_ns``,
        ``idle_ns``, ``slices``), ``critical_path`` and every ``slices`` entry for plotting."""
        return self.run.profile()


class Diagnostic:
    """One validator finding; its attributes are the keys of ``sim validate --json``
    (``severity``, ``layer``, ``rule``, ``code``, ``message``, ``file``, ``engine``, ``index``,
    ``offset``, ``field``, ...; absent keys are None)."""

    def __init__(self, fields):
        self._fields = dict(fields)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return self._fields.get(name)

    def to_dict(self):
        """The diagnostic as its JSONL object."""
        return dict(self._fields)

    def __repr__(self):
        return "Diagnostic(%r)" % (self._fields,)


from . import _native  # noqa: E402
from .builder import Kernel  # noqa: E402


def _neff_arg(neff):
    if isinstance(neff, Kernel):
        return neff.neff()
    if isinstance(neff, (bytearray, memoryview)):
        return bytes(neff)
    return neff


def run(neff, inputs=None, *, arch=None, check_races=False, schedules=1, max_steps=None,
        profile=False, ranks=None, collective_order="replica"):
    """Run a kernel NEFF (a path, bytes or a :class:`Kernel`) with ``inputs`` ({name:
    ndarray}; inputs not given take the NEFF's own data). Returns a :class:`Result`; raises a
    :class:`SimulationFault` subclass on a fault and :class:`NeffError` on a bad NEFF.
    ``profile=True`` records the timeline during the run (else ``Result.profile()`` replays
    the round-robin run with it).

    Several ranks (docs/collectives.md): ``inputs`` a list with one dict per rank, or
    ``ranks=N`` (every rank then takes the same ``inputs``); a kernel whose collectives span
    several ranks runs as that world by default. ``collective_order`` is ``"replica"`` (fp32,
    ranks in replica order: the compiler's BIR simulator) or ``"ring"``."""
    r = _native.run(
        _neff_arg(neff),
        inputs,
        arch=arch,
        check_races=check_races,
        schedules=schedules,
        max_steps=max_steps,
        profile=profile,
        ranks=ranks,
        collective_order=collective_order,
    )
    return Result(**r)


def validate(stream_or_neff, arch=None, engine=None, *, fail_fast=False):
    """L2 wire validation (and the lint) of a NEFF (path, bytes or :class:`Kernel`) or of
    one engine stream (a ``.bin`` path, or bytes with ``engine``). Returns a list of
    :class:`Diagnostic`; an empty list means every bundle is valid."""
    d = _native.validate(_neff_arg(stream_or_neff), arch, engine, fail_fast)
    return [Diagnostic(x) for x in d]


def verify(bir_or_neff, arch=None, rules=None):
    """L1 verification of a BIR module (JSON text or a ``.json`` path) or of a NEFF's
    streams lifted to BIR (path, bytes or :class:`Kernel`). ``rules``: rule or property
    names and groups as ``sim verify --rules`` takes them (default: the default L1 set).
    Returns a list of :class:`Diagnostic`."""
    d = _native.verify(_neff_arg(bir_or_neff), arch, rules)
    return [Diagnostic(x) for x in d]


def decode(data, arch, engine=None):
    """Decode an engine stream's bytes: one dict per bundle (``sim decode --json``)."""
    return _native.decode(bytes(data), arch, engine)


def disasm(data, arch, engine=None, syntax="tpbsim"):
    """The text form of an engine stream's bytes, one line per bundle."""
    return _native.disasm(bytes(data), arch, engine, syntax)


def asm(text, arch):
    """Assemble the text form (either syntax of ``docs/asm.md``) into a stream's bytes."""
    return _native.asm(text, arch)


def convert(array, to, *, saturate=True, nan_selector=False):
    """Cast ``array`` to the dtype ``to`` (``"bfloat16"``, ``ml_dtypes.float8_e4m3fn``, ...)
    through the simulator's cast engine (``sim convert``); returns a new array."""
    return _native.convert(array, to, saturate=saturate, nan_selector=nan_selector)


def variables(neff):
    """The DRAM variables of a NEFF's kernel (path, bytes or :class:`Kernel`): a list of
    dicts with ``name``, ``kind`` (``input``, ``output``, ...), ``dtype``, ``shape`` and
    ``size`` in bytes."""
    return _native.variables(_neff_arg(neff))


def streams(neff):
    """The engine streams of a NEFF (path, bytes or :class:`Kernel`): a list of dicts with
    ``member``, ``subgraph``, ``engine`` and ``data`` (the stream's bytes)."""
    return _native.streams(_neff_arg(neff))


def spec(arch):
    """The ISA spec of a generation: opcodes, formats with their fields, enumerations."""
    return _native.spec(arch)


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
    "Diagnostic",
    "Kernel",
    "run",
    "validate",
    "verify",
    "decode",
    "disasm",
    "asm",
    "convert",
    "spec",
    "streams",
    "variables",
]
