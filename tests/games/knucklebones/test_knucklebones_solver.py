"""The one entry point of the exact Knucklebones solve (issue 30): the device picked once, from
the options, and one Solution type whatever ran."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.errors import UsageError
from pipeline.games.knucklebones.exact import cpu as exact
from pipeline.games.knucklebones.exact import solver
from pipeline.games.knucklebones.exact.solution import Solution, midpoint
from pipeline.games.knucklebones.game import KnuckleRules
from tests.conftest import invoke


@pytest.mark.parametrize(
    ("options", "chosen"),
    [
        ({}, "cpu"),
        ({"device": "cuda"}, "cuda"),
        ({"workers": 2}, "dask"),
        ({"address": "tcp://host:8786"}, "dask"),
        ({"workers": 2, "checkpoint_dir": "/tmp/x", "resume": True}, "dask"),
    ],
)
def test_the_backend_is_picked_from_the_options(options: dict, chosen: str) -> None:
    assert solver.backend(**options) == chosen


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"device": "tpu"}, "--device must be one of cpu, cuda, not 'tpu'"),
        ({"device": "cuda", "workers": 2}, "--device cuda runs in this process"),
        ({"device": "cuda", "address": "h:1"}, "--device cuda runs in this process"),
        ({"checkpoint_dir": "/tmp/x"}, "--checkpoint-dir and --resume need --workers N"),
        ({"workers": 2, "resume": True}, "--resume needs --checkpoint-dir"),
        ({"workers": -1}, "--workers must be 0"),
    ],
)
def test_options_that_do_not_go_together_are_refused(options: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message.replace("(", r"\(")):
        solver.backend(**options)
    args = ["knucklebones", "solve-exact", "--columns", "1", "--rows", "1", "--faces", "2"]
    flags = {"device": "--device", "workers": "--workers", "address": "--address",
             "checkpoint_dir": "--checkpoint-dir"}  # fmt: skip
    for key, value in options.items():
        args += ["--resume"] if key == "resume" else [flags[key], str(value)]
    said = invoke(args)  # the command says the same, in one line, before any work
    assert said.code == 2 and message in said.stderr and said.stderr.count("\n") == 1


def test_one_solution_type_reads_host_values_and_device_bounds_alike() -> None:
    rules = KnuckleRules(2, 1, 2)
    cpu = solver.solve(rules, tol=1e-12)
    assert cpu.backend == "cpu" and cpu.n_states == 28 and cpu.bound <= 1e-12
    direct = exact.solve(rules, tol=1e-12, threads=1)
    assert np.abs(cpu.values() - direct.value).max() <= 2e-12
    assert cpu.value_of(5) == float(cpu.values(5, 6)[0]) and cpu.host() is cpu
    bounds = np.stack([direct.value - 1e-13, direct.value + 1e-13], axis=1)

    class Device:  # what a numba device array offers: slicing, then a copy to the host
        def __init__(self, rows: np.ndarray) -> None:
            self.rows, self.shape = rows, rows.shape

        def __getitem__(self, at: slice) -> Device:
            return Device(self.rows[at])

        def copy_to_host(self) -> np.ndarray:
            return self.rows

    gpu = Solution.of(rules, Device(bounds), "cuda", np.float64, 1e-13, 0.0, 9, 1.0, 0.5)
    assert gpu.on_device and gpu.n_states == 28
    assert np.array_equal(gpu.values(3, 9), midpoint(bounds[3:9]))
    held = gpu.host()
    assert not held.on_device and np.array_equal(held.values(), midpoint(bounds))
