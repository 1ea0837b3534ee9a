"""The agent's pure parsers, on text captured from real boards (tests/data/jetson_samples.json)."""
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from remote_agent import facts, nsys_locate

SAMPLES = json.loads((Path(__file__).parent / "data" / "jetson_samples.json").read_text())


def samples(kind):
    return [s for s in SAMPLES if s["kind"] == kind and not s.get("truncated")]


@pytest.mark.parametrize("sample", samples("nv_tegra_release"), ids=lambda s: s["id"])
def test_nv_tegra_release_gives_the_l4t_of_every_real_sample(sample):
    assert facts.parse_nv_tegra_release(sample["text"]) == sample["l4t"]


def test_l4t_maps_to_jetpack_and_unknown_stays_unknown():
    assert facts.jetpack_for_l4t("32.7.1") == "4.6.1"
    assert facts.jetpack_for_l4t("35.3.1") == "5.1.1"
    assert facts.jetpack_for_l4t("36.4.3") == "6.2"
    assert facts.jetpack_for_l4t("31.0.0") is None
    assert facts.parse_nv_tegra_release("Ubuntu 18.04") is None


@pytest.mark.parametrize("sample", samples("dpkg_query_l4t_core"), ids=lambda s: s["id"])
def test_dpkg_query_fallback(sample):
    assert facts.parse_l4t_core_version(sample["text"]) == sample["l4t"]


@pytest.mark.parametrize("text, expected", [
    ("NV Power Mode: MAXN\n0\n", {"name": "MAXN", "id": 0}),
    ("NV Fan Mode:cool\nNV Power Mode: MODE_30W_4CORE\n5", {"name": "MODE_30W_4CORE", "id": 5}),
    ("", None),
])
def test_nvpmodel_query(text, expected):
    assert facts.parse_nvpmodel_query(text) == expected


def test_nvpmodel_real_samples_all_parse():
    for sample in samples("nvpmodel_q"):
        parsed = facts.parse_nvpmodel_query(sample["text"])
        assert parsed["name"] and isinstance(parsed["id"], int), sample["id"]


def test_device_tree_strings_are_nul_separated():
    model = "NVIDIA Jetson Nano Developer Kit"
    assert facts.parse_device_tree_string(model.encode() + b"\x00") == [model]
    compatible = facts.parse_device_tree_string(b"nvidia,p3450-0000\x00nvidia,jetson-nano\x00nvidia,tegra210\x00")
    assert facts.chip_from_compatible(compatible) == "tegra210"
    assert facts.chip_from_compatible(["nvidia,p3768-0000+p3767-0005", "nvidia,tegra234"]) == "tegra234"
    assert facts.chip_from_compatible(["raspberrypi,4-model-b", "brcm,bcm2711"]) is None


@pytest.mark.parametrize("text, version", [
    ("NVIDIA Nsight Systems version 2022.4.2.1-df9881f\n", "2022.4.2.1"),
    ("NVIDIA Nsight Systems version 2019.5.2.16-b54ef97\n", "2019.5.2.16"),
    ("NVIDIA Nsight Systems version 2024.5.1.113-245134619542v0\n", "2024.5.1.113"),
    ("bash: nsys: command not found\n", None),
])
def test_nsys_version(text, version):
    assert nsys_locate.parse_nsys_version(text) == version


def test_version_tuple_orders_releases():
    assert nsys_locate.version_tuple("2022.4.2.1") > nsys_locate.version_tuple("2019.5.2.16")
    assert nsys_locate.version_tuple(None) == ()


def _debian_layout(root):
    """The layout of Debian's nsight-systems packages, where nsys cannot find its own importer."""
    (root / "usr/bin").mkdir(parents=True)
    lib = root / "usr/lib/nsight-systems"
    (lib / "bin").mkdir(parents=True)
    (lib / "host-linux-x64").mkdir()
    target = root / "usr/lib/x86_64-linux-gnu/nsight-systems/target-linux-x64"
    target.mkdir(parents=True)
    (target / "nsys").write_text("#!/bin/sh\necho 'NVIDIA Nsight Systems version 2022.4.2.1-df9881f'\n")
    (target / "nsys").chmod(0o755)
    os.symlink("../x86_64-linux-gnu/nsight-systems/target-linux-x64", lib / "target-linux-x64")
    os.symlink("../target-linux-x64/nsys", lib / "bin/nsys")
    os.symlink("../lib/nsight-systems/bin/nsys", root / "usr/bin/nsys")
    importer = lib / "host-linux-x64/QdstrmImporter"
    importer.write_text("#!/bin/sh\n")
    importer.chmod(0o755)
    return root / "usr/bin/nsys", importer


def test_importer_found_through_the_symlink_chain_though_nsys_misses_it(tmp_path):
    nsys, importer = _debian_layout(tmp_path)
    assert nsys_locate.find_importer(str(nsys)) == str(importer)
    assert nsys_locate.nsys_finds_importer(str(nsys)) is False
    path, version, tried = nsys_locate.find_nsys(str(nsys))
    assert (path, version, tried[0]) == (str(nsys), "2022.4.2.1", str(nsys))


def test_jetpack_layout_importer_beside_target(tmp_path):
    root = tmp_path / "opt/nvidia/nsight-systems/2022.2.3"
    (root / "target-linux-tegra-armv8").mkdir(parents=True)
    (root / "host-linux-armv8").mkdir()
    (root / "bin").mkdir()
    nsys = root / "target-linux-tegra-armv8/nsys"
    nsys.write_text("")
    nsys.chmod(0o755)
    (root / "host-linux-armv8/QdstrmImporter").write_text("")
    (root / "host-linux-armv8/QdstrmImporter").chmod(0o755)
    assert nsys_locate.nsys_finds_importer(str(nsys)) is True
    assert nsys_locate.find_importer(str(nsys)) == str(root / "host-linux-armv8/QdstrmImporter")


def test_clocks_from_cpufreq_and_the_gpus_devfreq():
    cpu = ["1479000\n", "1479000\n", "921600\n", None]  # the fourth core is offline: no cpufreq
    devfreq = {"57000000.gpu": "921600000\n", "6000000.c0_ppmu": "5\n"}
    assert facts.parse_clocks(cpu, devfreq) == {"cpu_mhz": [1479, 1479, 921], "gpu_mhz": 921}
    assert facts.parse_clocks([], {"17000000.ga10b": "1300500000"}) == {"cpu_mhz": [], "gpu_mhz": 1300}
    assert facts.parse_clocks([], {"17000000.gv11b": "not a number"}) is None
    assert facts.parse_clocks([], {}) is None


def test_thermal_zones_by_type_on_a_nano_and_unreadable_zones_left_out():
    """The Nano's zone types (s076) with a Nano's temp files (s046): same tegra210 layout of six zones."""
    types = [line.split(": ", 1)[1] for line in next(s for s in SAMPLES if s["id"] == "s076")["text"].splitlines()]
    temps = next(s for s in SAMPLES if s["id"] == "s046")["text"].splitlines()
    assert facts.parse_thermal_zones(dict(zip(types, temps))) == {
        "AO-therm": 50.0, "CPU-therm": 41.5, "GPU-therm": 40.5, "PLL-therm": 40.5, "PMIC-Die": 100.0,
        "thermal-fan-est": 41.25}
    # Orin Nano (s034): power-gated zones fail to read; a powered-off zone reads -256 C
    assert facts.parse_thermal_zones({"cpu-thermal": "49468\n", "gpu-thermal": None, "cv0-thermal": "-256000"}) == {
        "cpu-thermal": 49.468}


def test_board_state_on_this_machine_names_what_it_has():
    state = facts.board_state()
    assert state.power_mode is None and state.at is None and state.error is None  # no nvpmodel off a Jetson
    assert state.load_average is not None and len(state.load_average) == 3 and min(state.load_average) >= 0
    # asked beside another answer (preflight's, the capture's): with when, on the board's clock, in UTC
    stamped = facts.board_state_now()
    assert stamped.at is not None and stamped.at.endswith("+00:00") and stamped.error is None


def test_a_process_start_comes_from_proc_not_from_when_it_was_seen():
    from remote_agent.watchdog import process_started_at
    before = time.time()
    child = subprocess.Popen(["sleep", "5"])
    try:
        time.sleep(0.6)  # seen this late by a poll, it still started right after `before`
        seen = time.time()
        assert before - 0.05 <= process_started_at(child.pid, before - 60, seen) <= before + 0.2
        assert process_started_at(child.pid, seen, seen + 1) == seen     # never before the capture began
    finally:
        child.kill()
        child.wait()
    assert process_started_at(child.pid, before, 123.0) == 123.0       # gone: when it was seen


def test_nsys_counts_as_stalled_once_its_scratch_stops_growing_by_megabytes():
    from remote_agent.capture_machine import STALL_GROWTH_BYTES, STALL_S, WriteProgress
    # a working nsys: megabytes a second until it is done
    working = WriteProgress(0.0, 180_000)
    assert not any(working.stalled(t / 10, 180_000 + t * 400_000) for t in range(1, 400))
    # stuck on a full disk, as seen: 4 kB more every 1.5 s never counts as writing the report
    trickle = WriteProgress(0.0, 3_400_000)
    verdicts = [(t * 1.5, trickle.stalled(t * 1.5, 3_400_000 + t * 4100)) for t in range(1, 40)]
    assert [t for t, stalled in verdicts if stalled][0] == pytest.approx(STALL_S + 1.5, abs=1.5)
    # files removed, then growth again: the growth counts from what was left
    cleaned = WriteProgress(0.0, 5 * STALL_GROWTH_BYTES)
    assert not cleaned.stalled(10.0, 100_000)
    assert not cleaned.stalled(20.0, 100_000 + STALL_GROWTH_BYTES)  # grew by the full amount after the removal
    assert not cleaned.stalled(20.0 + STALL_S, 100_000 + STALL_GROWTH_BYTES)
    assert cleaned.stalled(20.1 + STALL_S, 100_000 + STALL_GROWTH_BYTES)
    # the classic stall: not a byte more
    still = WriteProgress(0.0, 114_000)
    assert not still.stalled(STALL_S, 114_000) and still.stalled(STALL_S + 0.1, 114_000)


def test_a_stopped_nsys_without_a_report_leaves_its_daemon_only_a_short_grace():
    from remote_agent.capture_machine import AFTER_REPORT_GRACE_S, ORPHAN_GRACE_S, leftover_grace_s
    from remote_agent.messages import WatchdogStep
    stalled = [WatchdogStep(kind="stalled", signal="SIGINT", target="nsys")]
    assert (AFTER_REPORT_GRACE_S, ORPHAN_GRACE_S) == (20.0, 2.0)
    # as seen in the suite: stalled, one SIGINT, nsys exits 0 without a report; its daemon spins on
    assert leftover_grace_s(stalled, report_written=False) == ORPHAN_GRACE_S
    # a report to finish, or an nsys that ended by itself: the daemon may still be writing
    assert leftover_grace_s(stalled, report_written=True) == AFTER_REPORT_GRACE_S
    assert leftover_grace_s([], report_written=False) == AFTER_REPORT_GRACE_S
    app_only = [WatchdogStep(kind="outlived", signal="SIGTERM", target="app")]
    assert leftover_grace_s(app_only, report_written=False) == AFTER_REPORT_GRACE_S
