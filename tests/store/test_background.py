"""pipeline.store.background: the writer thread the build and the streamed tables share."""

from __future__ import annotations

import threading
import time

import pytest

from pipeline.store.background import Background


class Log:
    """Records which call ran on which thread, and catches calls of one key that overlap."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.order: dict[str, list[int]] = {}
        self.threads: dict[tuple[str, int], str] = {}
        self.running: set[str] = set()
        self.overlaps = 0
        self.most_at_once = 0

    def call(self, key: str, i: int, seconds: float = 0.002) -> None:
        with self.lock:
            if key in self.running:
                self.overlaps += 1
            self.running.add(key)
            self.most_at_once = max(self.most_at_once, len(self.running))
            self.threads[key, i] = threading.current_thread().name
        time.sleep(seconds)
        with self.lock:
            self.running.discard(key)
            self.order.setdefault(key, []).append(i)


@pytest.mark.parametrize("caller_runs", [False, True])
def test_calls_of_a_key_run_in_order_and_never_overlap(caller_runs: bool) -> None:
    log = Log()
    with Background(depth=2, name="worker", caller_runs=caller_runs) as bg:
        for i in range(30):
            for key in ("edges", "policy", "moves"):
                bg.submit(log.call, key, i, key=key)
        bg.wait()
    assert log.order == {key: list(range(30)) for key in ("edges", "policy", "moves")}
    assert log.overlaps == 0
    producer = threading.current_thread().name
    ran_here = {k for k, name in log.threads.items() if name == producer}
    if caller_runs:
        assert ran_here, "the producer never helped while the queue was full"
        assert log.most_at_once == 2  # the worker and the producer, on different keys
    else:
        assert not ran_here
        assert log.most_at_once == 1


def test_one_key_is_never_run_by_the_producer_while_the_worker_runs_it() -> None:
    log = Log()
    with Background(depth=1, caller_runs=True) as bg:
        for i in range(20):
            bg.submit(log.call, "policy", i, 0.005, key="policy")
        bg.wait()
    assert log.order == {"policy": list(range(20))}
    assert log.overlaps == 0


def test_a_failed_call_is_raised_in_the_producer_and_stops_the_worker() -> None:
    def fail() -> None:
        raise OSError("disk full")

    bg = Background(depth=1)
    bg.submit(fail, key="edges")
    with pytest.raises(OSError, match="disk full"):
        for _ in range(100):  # raised at a later submit, once the worker has failed
            bg.submit(time.sleep, 0.001, key="policy")
            time.sleep(0.01)
    with pytest.raises(OSError, match="disk full"):
        bg.wait()
    bg.close()


def test_a_call_the_producer_runs_raises_in_the_producer() -> None:
    started, release = threading.Event(), threading.Event()

    def busy() -> None:
        started.set()
        release.wait(5)

    with Background(depth=1, caller_runs=True) as bg:
        bg.submit(busy, key="edges")
        # the worker is busy with edges (until then the next submit would find edges queued and
        # run it here itself: five seconds, and not the case this test is about)
        assert started.wait(5)

        def fail() -> None:
            raise ValueError("rows do not fit")

        bg.submit(fail, key="moves")  # waits in the queue: the next submit runs it here
        with pytest.raises(ValueError, match="do not fit"):
            bg.submit(time.sleep, 0, key="states")
        release.set()


def test_close_drops_the_queued_calls() -> None:
    ran: list[int] = []
    release = threading.Event()
    bg = Background(depth=5)
    bg.submit(release.wait, 5)
    for i in range(3):
        bg.submit(ran.append, i)
    closing = threading.Thread(target=bg.close)
    closing.start()
    # release the first call only once close() has dropped the queue (it sets _stop as it
    # does): a fixed sleep here raced the closing thread on a loaded machine
    deadline = time.monotonic() + 10
    while not bg._stop and time.monotonic() < deadline:
        time.sleep(0.001)
    assert bg._stop, "close() never began"
    release.set()
    closing.join(5)
    assert not closing.is_alive()
    assert ran == []
    with pytest.raises(RuntimeError, match="stopped"):
        bg.submit(ran.append, 9)
