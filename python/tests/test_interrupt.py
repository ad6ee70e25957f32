"""Ctrl-C during a long `tpbsim.run`: the run stops and KeyboardInterrupt is raised at once,
and other Python threads run while it simulates."""

import os
import signal
import threading
import time

import tpbsim


def test_ctrl_c_stops_a_long_run_and_other_threads_run_meanwhile():
    k = tpbsim.Kernel(arch="v3")
    # A branch to itself: the run lasts until its step budget (about a minute at 10^9).
    k.sp.compare_branch(dtype="INT32", target_mode="REL_IMM", br_immediate=0)
    ticks = []
    done = threading.Event()

    def tick():
        while not done.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.01)

    ticker = threading.Thread(target=tick)
    ticker.start()
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    start = time.monotonic()
    timer.start()
    raised = None
    try:
        tpbsim.run(k, max_steps=10**9)
    except KeyboardInterrupt as e:
        raised = e
    finally:
        took = time.monotonic() - start
        done.set()
        ticker.join()
        timer.cancel()
    assert isinstance(raised, KeyboardInterrupt)
    assert took < 3.0, took
    # The ticker thread ran while the simulation held no interpreter lock.
    assert len([t for t in ticks if start + 0.1 < t < start + 0.5]) >= 10, len(ticks)
