"""How the host takes Ctrl-C and SIGTERM while it follows a capture (runs/remote_capture.py), with real signals."""
from __future__ import annotations

import os
import signal
import time

import pytest

from orchestrator.runs.remote_capture import INTERRUPT_REASON, HostStop, StoppedFollowing, interrupts_as_requests


def test_the_first_interrupt_is_a_request_and_the_second_stops_following():
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    stop = HostStop("a deadline")
    with pytest.raises(StoppedFollowing):
        with interrupts_as_requests(stop):
            os.kill(os.getpid(), signal.SIGTERM)  # no exception: a request (the handler runs at the next sleep)
            deadline = time.monotonic() + 5
            while not stop.interrupt.is_set() and time.monotonic() < deadline:
                time.sleep(0.01)
            assert stop.interrupt.is_set() and not stop.abandon.is_set() and stop.reason == INTERRUPT_REASON
            os.kill(os.getpid(), signal.SIGTERM)  # SIGINT may be ignored here (a suite started in the background)
            time.sleep(5)  # the second ends this wait at once
            pytest.fail("the second interrupt did not stop following")
    assert stop.abandon.is_set()
    assert {sig: signal.getsignal(sig) for sig in before} == before  # the handlers of before, back


def test_an_ignored_interrupt_stays_ignored():
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        stop = HostStop()
        with interrupts_as_requests(stop):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.2)
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN and not stop.interrupt.is_set()
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
