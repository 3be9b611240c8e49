"""The CPU the package's kernels are compiled for: one portable target, chosen before numba loads.

numba compiles for the machine it runs on and keys its on-disk cache by that CPU's name and
features, so a kernel compiled on one machine serves no other. The kernels shipped with the
package (:mod:`pipeline.solve.shipped`) are compiled for ``x86-64-v3`` instead (AVX2, FMA,
BMI2: Intel since Haswell, 2013; AMD since Zen, 2017), which every such machine runs, so that a
person's first command loads them instead of compiling for seconds. The kernels are scalar loops
over tables and lose nothing measurable to the host's own name (docs/benchmarks.md).

numba reads ``NUMBA_CPU_NAME`` once, when it is imported, so this runs on the package's import,
before any of its modules imports numba, and changes nothing where numba is already loaded, where
the person chose a CPU themselves (``NUMBA_CPU_NAME``), or where the machine lacks one of the
target's instructions: numba then compiles for the host, as it always did.
"""

from __future__ import annotations

import os
import sys

#: The target's name, as LLVM knows it.
TARGET = "x86-64-v3"

#: The instructions x86-64-v3 assumes, as Linux's ``/proc/cpuinfo`` names them.
_NEEDED = frozenset(
    {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"}
    | {"sse4_1", "sse4_2", "ssse3", "popcnt", "cx16"}
)


def _host_flags() -> frozenset[str]:
    """The host CPU's flags (empty where they cannot be read: then the target is not chosen)."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.partition(":")[2].split())
    except OSError:
        pass
    return frozenset()


def choose() -> None:
    """Set numba's CPU to :data:`TARGET` for this process and its children, where it applies."""
    if "numba" in sys.modules or "NUMBA_CPU_NAME" in os.environ:
        return
    if sys.platform != "linux" or os.uname().machine != "x86_64":
        return
    if _host_flags() >= _NEEDED:
        os.environ["NUMBA_CPU_NAME"] = TARGET
        # no host features on top of the name's own: the same code (and cache key) everywhere
        os.environ["NUMBA_CPU_FEATURES"] = ""
