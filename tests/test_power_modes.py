"""Power modes read from NVIDIA's own nvpmodel.conf files (tests/data/jetson/SOURCES.md), and nvpmodel's words
as published captures show them: which switches need a reboot, and a switch nvpmodel declined."""
from __future__ import annotations

from pathlib import Path

import pytest

from remote_agent import power_modes

DATA = Path(__file__).parent / "data" / "jetson"


def conf(name: str) -> dict:
    return power_modes.parse_conf((DATA / name).read_text())


def test_agx_orin_modes_and_their_gpu_power_gating():
    agx = conf("nvpmodel_p3701_0000.conf")
    assert agx["default"] == 2
    tpc = "TPC_POWER_GATING TPC_PG_MASK"
    assert {i: (m["name"], power_modes.gating(m)) for i, m in agx["modes"].items()} == {
        0: ("MAXN", {tpc: "0"}), 1: ("MODE_15W", {tpc: "248"}), 2: ("MODE_30W", {tpc: "240"}),
        3: ("MODE_50W", {tpc: "0"})}
    assert agx["modes"][0]["settings"]["CPU_ONLINE CORE_11"] == "1"
    assert agx["modes"][1]["settings"]["CPU_ONLINE CORE_4"] == "0"


@pytest.mark.parametrize("name, current, reachable", [
    ("nvpmodel_p3701_0000.conf", 2, [2]),          # MODE_30W: every other mode gates other TPCs
    ("nvpmodel_p3701_0000.conf", 0, [0, 3]),       # MAXN and MODE_50W gate none
    ("nvpmodel_p3767_0000.conf", 2, [1, 2]),       # 10W and 15W share TPC 252 (and FBP 2)
    ("nvpmodel_t194_p3668.conf", 5, list(range(9))),  # Xavier NX: one mask for all, cores change freely
])
def test_the_modes_a_board_switches_to_as_it_runs(name, current, reachable):
    assert power_modes.switchable_modes(conf(name), current) == reachable


def test_the_reason_names_both_modes_and_the_masks():
    assert power_modes.switch_problem(conf("nvpmodel_p3767_0000.conf"), 2, 0) == (
        "mode 0 (MAXN) sets TPC_POWER_GATING TPC_PG_MASK 240 where the current mode 2 (15W) has "
        "TPC_POWER_GATING TPC_PG_MASK 252: the GPU's power gating changes only at boot, so nvpmodel would ask to "
        "reboot the board")
    assert power_modes.unknown_mode(conf("nvpmodel_p3767_0000.conf"), 9) == (
        "there is no power mode 9 in /etc/nvpmodel.conf (its modes: 0 (MAXN), 1 (10W), 2 (15W), 3 (25W))")
    assert power_modes.unknown_mode(conf("nvpmodel_p3767_0000.conf"), 3) is None
    assert power_modes.switch_problem(conf("nvpmodel_p3767_0000.conf"), 2, 9) is None
    assert power_modes.switch_problem(conf("nvpmodel_p3767_0000.conf"), None, 0) is None  # current mode unknown


# nvpmodel's output as published (see the module's docstring): a declined reboot (a Go test's capture from a
# device), one with unreadable input, and a mode write the GPU driver refused at boot (OE4T/meta-tegra issue 1864)
DECLINED = ("NVPM WARN: Golden image context is already created\nNVPM WARN: Reboot required for changing to this "
            "power mode: 1\nNVPM WARN: DO YOU WANT TO REBOOT NOW? enter YES/yes to confirm:\n"
            "NVPM ERROR: optMask is 1, no request for power mode\n")
BAD_INPUT = ("NVPM WARN: Reboot required for changing to this power mode: 2\nNVPM WARN: DO YOU WANT TO REBOOT NOW? "
             "enter YES/yes to confirm:\nNVPM ERROR: bad input!\nNVPM ERROR: optMask is 1, no request for power mode\n")
EBUSY = ("NVPM ERROR: Error writing 128 to /sys/devices/platform/gpu.0/tpc_pg_mask: 16\nNVPM ERROR: failed to write "
         "PARAM TPC_POWER_GATING: ARG TPC_PG_MASK: PATH: /sys/devices/platform/gpu.0/tpc_pg_mask VAL: 128\n"
         "NVPM ERROR: failed to set power mode!\nNVPM ERROR: optMask is 2, no request for power mode\n")


def test_a_mask_the_target_mode_does_not_name_stays_as_it_is():
    """nvpmodel writes what a mode sets: a mode without FBP_PG_MASK leaves it, so only TPC can differ."""
    orin_nx = conf("nvpmodel_p3767_0000.conf")
    del orin_nx["modes"][3]["settings"]["FBP_POWER_GATING FBP_PG_MASK"]
    assert power_modes.switch_problem(orin_nx, 0, 3) is None  # both TPC 240
    orin_nx["modes"][3]["settings"]["FBP_POWER_GATING FBP_PG_MASK"] = "0"
    assert "FBP_POWER_GATING FBP_PG_MASK 0 where the current mode 0 (MAXN) has FBP_POWER_GATING FBP_PG_MASK 2" in \
        power_modes.switch_problem(orin_nx, 0, 3)


@pytest.mark.parametrize("output, said", [
    (DECLINED, "NVPM WARN: Reboot required for changing to this power mode: 1"),
    (BAD_INPUT, "NVPM WARN: Reboot required for changing to this power mode: 2"),
    (EBUSY, "NVPM ERROR: Error writing 128 to /sys/devices/platform/gpu.0/tpc_pg_mask: 16"),
    ("NVPM WARN: fan mode is not set!\n", None),
    ("", None),
])
def test_a_switch_nvpmodel_did_not_make_is_read_from_its_words(output, said):
    assert power_modes.refused_switch(output) == said
