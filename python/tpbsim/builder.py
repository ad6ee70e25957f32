"""The kernel builder: ``tpbsim.Kernel`` is the Rust class (``tpbsim._native.Kernel``)."""

from ._native import Kernel, Tensor

__all__ = ["Kernel", "Tensor"]
