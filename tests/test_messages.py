"""The messages host and agent exchange (remote_agent/messages.py, wire.py): read leniently as run folders are,
strictly where a side reads what it must trust, and written back as they were read."""
from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from remote_agent.messages import PROTOCOL, CaptureResult, EarlyEnd, Facts, ImportOutcome, LaunchRequest, WatchdogStep

JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
                    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner), max_leaves=20)


def test_a_value_of_the_wrong_kind_reads_as_missing_and_an_unknown_key_is_kept():
    found = CaptureResult.from_wire({"nsys_exit": "0", "elapsed_s": True, "app_exit": 3,
                                     "reports": {".x": 1, ".y": "p"},
                                     "watchdog": [{"kind": "stalled", "target": "nsys"}, "junk"],
                                     "ended_early": {"kind": "disk_low", "after_s": 2}, "import": {"output": "o"},
                                     "newer": [1]})
    assert (found.nsys_exit, found.elapsed_s, found.app_exit) == (None, 0.0, 3)
    assert found.reports == {".y": "p"} and found.import_ == ImportOutcome(output="o")
    assert found.extra == {"newer": [1], "nsys_exit": "0", "elapsed_s": True}  # kept, as it was, for writing back
    assert found.to_wire(version=False)["nsys_exit"] == "0"
    assert found.watchdog == [WatchdogStep(kind="stalled", target="nsys")]
    assert found.ended_early == EarlyEnd(kind="disk_low", after_s=2.0)
    again = found.to_wire(version=False)  # a whole number stays one, an item of the wrong kind comes back as it was
    assert again["ended_early"]["after_s"] == 2 and isinstance(again["ended_early"]["after_s"], int)
    assert again["watchdog"] == [{"kind": "stalled", "target": "nsys"}, "junk"] and again["reports"] == {".x": 1,
                                                                                                         ".y": "p"}


def test_strict_reading_names_the_field_of_the_wrong_kind():
    with pytest.raises(ValueError, match=r"CaptureResult.nsys_exit cannot be '0'"):
        CaptureResult.from_wire({"nsys_exit": "0"}, strict=True)
    with pytest.raises(ValueError, match="'junk' is not a WatchdogStep"):
        CaptureResult.from_wire({"watchdog": ["junk"]}, strict=True)
    with pytest.raises(TypeError, match="LaunchRequest has no field argvs"):
        LaunchRequest(argvs=["a"])


def test_what_a_side_sends_says_its_version_and_what_was_read_is_written_back_as_it_was():
    sent = LaunchRequest(argv=["nsys"], run_dir="/w/r").to_wire()
    assert sent["v"] == PROTOCOL and sent["settings"]["v"] == PROTOCOL and sent["settings"]["grace_s"] == 30.0
    stored = {"board": {"model": "Jetson", "cpus": []}, "nsys": {"version": "2022.4"}, "later": 1}
    assert Facts.from_wire(stored).to_wire(version=False) == stored  # nothing added, nothing lost


@given(JSON | st.dictionaries(st.sampled_from(["nsys_exit", "watchdog", "reports", "ended_early", "other"]), JSON))
def test_any_json_reads_and_is_written_back_with_every_key_it_had(value):
    found = CaptureResult.from_wire(value)
    wire = found.to_wire(version=False)
    assert json.loads(json.dumps(wire)) == wire
    if isinstance(value, dict):
        assert set(value) - {"v"} <= set(wire)
        fields = {name.rstrip("_") for name in CaptureResult._fields()}
        assert all(wire[k] == v for k, v in value.items() if k not in fields and k != "v")
