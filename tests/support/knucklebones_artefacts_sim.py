"""Issue 38's GPU kernels under numba's CUDA simulator, against the CPU, in one process: the
gather of given state ids from bounds left on the GPU, and greedy against its best response.

Run by tests/games/knucklebones/test_knucklebones_artefacts.py as ``NUMBA_ENABLE_CUDASIM=1
python -m tests.support.knucklebones_artefacts_sim`` (the simulator must be on before numba is
imported); prints one JSON object of findings.
"""

from __future__ import annotations

import json

import numpy as np

from tests.support.cuda_sim import poll_gently


def main() -> dict:
    from pipeline.games.knucklebones.exact import gpu, solver
    from pipeline.games.knucklebones.game import KnuckleRules
    from tests.support.knucklebones_greedy import solve_cpu

    found: dict = {"simulated": gpu.simulated()}
    rng = np.random.default_rng(5)
    for objective, dtype in (("wins", np.float64), ("score", np.float32)):
        rules = KnuckleRules(2, 2, 3, objective)
        tol = 1e-11 if dtype == np.float64 else 1e-6
        sol = gpu.solve(rules, tol=tol, dtype=dtype)
        cpu = solver.solve(rules, "cpu", tol=1e-12).values()
        # any order, repeats, both ends
        ids = np.concatenate([rng.integers(0, sol.n_states, 200), [0, sol.n_states - 1, 0]])
        got = sol.at(ids)
        whole = sol.values()
        found[f"gather-{objective}-{np.dtype(dtype).name}"] = {
            "on_device": sol.on_device,
            "equals_the_range_copy": bool(np.array_equal(got, whole[ids])),
            "max_diff_cpu": float(np.abs(got - cpu[ids]).max()),
            "tolerance": tol,
        }
    # chunks: a gather of more ids than a chunk holds, straight from the bounds
    rules = KnuckleRules(2, 1, 2, "wins")
    cuda = gpu.cuda_module()
    tb_sol = gpu.solve(rules)
    ids = np.arange(tb_sol.n_states)[::-1].copy()
    bounds = cuda.to_device(np.stack([tb_sol.values(), tb_sol.values()], axis=1))
    found["gather-chunks"] = bool(
        np.array_equal(gpu.gather(bounds, ids, chunk=5), tb_sol.values()[ids])
    )
    for board in ((3, 1, 2), (3, 1, 3), (2, 2, 2)):
        rules = KnuckleRules(*board, "wins")
        cpu_value = solve_cpu(rules)
        done = gpu.greedy_solve(rules, tol=1e-10)
        cut = gpu.greedy_solve(rules, tol=1e-10, max_sweeps=3)
        name = "x".join(map(str, board[:2])) + f"-d{board[2]}"
        found[f"greedy-{name}"] = {
            "converged": done.converged,
            "max_diff": max(
                abs(sum(done.greedy_first) / 2 - cpu_value.greedy_first[0]),
                abs(sum(done.greedy_second) / 2 - cpu_value.greedy_second[0]),
            ),
            "cut_converged": cut.converged,
            "cut_holds": all(
                lo <= exact[0] + 1e-12 and exact[0] <= hi + 1e-12
                for (lo, hi), exact in (
                    (cut.greedy_first, cpu_value.greedy_first),
                    (cut.greedy_second, cpu_value.greedy_second),
                )
            ),
            "cut_width": cut.greedy_first[1] - cut.greedy_first[0],
        }
    return found


if __name__ == "__main__":
    poll_gently()
    print(json.dumps(main()))
