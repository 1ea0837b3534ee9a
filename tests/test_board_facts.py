"""The board facts the agent collects, on boards laid out from real published text (tests/fake_board.py), and on
this machine, which is no Jetson."""
from __future__ import annotations

import pytest
from fake_board import lay_out

from remote_agent import board, facts
from remote_agent.boardfs import ROOT_VARIABLE


@pytest.fixture
def on_board(tmp_path, monkeypatch):
    def point(name: str) -> dict:
        monkeypatch.setenv(ROOT_VARIABLE, str(lay_out(tmp_path / name, name)))
        return facts.collect(None, str(tmp_path))
    return point


def test_a_jetson_nano_of_jetpack_4(on_board):
    found = on_board("nano")
    b = found["board"]
    assert (b["model"], b["chip"], b["l4t"], b["jetpack"], b["is_jetson"]) == (
        "NVIDIA Jetson Nano Developer Kit", "tegra210", "32.7.1", "4.6.1", True)   # L4T from dpkg-query alone
    assert b["power_mode"] == {"name": "MAXN", "id": 0}
    assert b["online_cores"] == [0, 1, 2, 3]
    assert b["cpus"] == [{"cpu": n, "online": True, "governor": "schedutil", "min_mhz": 102.0, "max_mhz": 1428.0,
                          "cur_mhz": 1428.0} for n in range(4)]
    assert b["gpu"] == {"device": "57000000.gpu", "governor": None, "min_mhz": 76.8, "max_mhz": 921.6,
                        "cur_mhz": 153.6, "available_mhz": [76.8, 153.6, 230.4, 307.2, 384.0, 460.8, 537.6, 614.4,
                                                            691.2, 768.0, 844.8, 921.6, 998.4]}
    assert b["emc_mhz"] == 1600.0 and b["jetson_clocks"] is False   # the cores' clocks float (102-1428 MHz)
    assert b["temperatures_c"] == {"AO-therm": 50.0, "CPU-therm": 41.5, "GPU-therm": 40.5, "PLL-therm": 40.5,
                                   "PMIC-Die": 100.0, "thermal-fan-est": 41.25}
    assert b["memory"] == {"ram_total_mb": 3964, "ram_available_mb": 1982, "swap_total_mb": 1982,
                           "swap_free_mb": 1982}
    assert b["clocks"] == {"cpu_mhz": [1428] * 4, "gpu_mhz": 153}
    assert found["board_root"].endswith("/nano") and found["system"]["work_dir_free_mb"] > 0


def test_an_orin_nano_of_jetpack_6_with_power_gated_zones(on_board):
    b = on_board("orin_nano")["board"]
    assert (b["model"], b["chip"], b["l4t"], b["jetpack"]) == (
        "NVIDIA Jetson Orin Nano Engineering Reference Developer Kit Super", "tegra234", "36.4.3", "6.2")
    assert b["power_mode"] == {"name": "25W", "id": 1}       # from 'nvpmodel -q --verbose' text
    assert [c["cur_mhz"] for c in b["cpus"]] == [960.0, 729.6, 729.6, 960.0, 729.6, 729.6]
    assert {c["governor"] for c in b["cpus"]} == {"ondemand"}
    assert (b["gpu"]["min_mhz"], b["gpu"]["max_mhz"], b["gpu"]["cur_mhz"]) == (306.0, 624.8, 306.0)
    assert b["emc_mhz"] == 665.6
    # cv0-cv2 fail to read (power-gated): left out, the others kept
    assert b["temperatures_c"] == {"cpu-thermal": 49.468, "gpu-thermal": 50.125, "soc0-thermal": 50.031,
                                   "soc1-thermal": 50.531, "soc2-thermal": 48.906, "tj-thermal": 50.531}
    assert b["memory"]["ram_total_mb"] == 7620


def test_an_agx_orin_of_jetpack_5(on_board):
    b = on_board("agx_orin")["board"]
    assert (b["model"], b["chip"], b["l4t"], b["jetpack"], b["power_mode"]) == (
        "Jetson AGX Orin", "tegra234", "35.3.1", "5.1.1", {"name": "MODE_30W", "id": 2})
    assert len(b["cpus"]) == 12 and b["online_cores"] == list(range(12))
    assert [c["cpu"] for c in b["cpus"]] == list(range(12))      # cpu10 after cpu9
    assert b["cpus"][10]["cur_mhz"] == 1113.6 and b["gpu"]["max_mhz"] == 1300.5 and b["emc_mhz"] == 2133.0
    assert b["temperatures_c"]["tj-thermal"] == 42.0


def test_held_clocks_are_jetson_clocks(tmp_path, monkeypatch):
    root = lay_out(tmp_path / "nano", "nano")
    for n in range(4):
        (root / f"sys/devices/system/cpu/cpu{n}/cpufreq/scaling_min_freq").write_text("1428000\n")
    monkeypatch.setenv(ROOT_VARIABLE, str(root))
    assert board.clock_facts()["jetson_clocks"] is False   # the GPU still floats
    (root / "sys/class/devfreq/57000000.gpu/min_freq").write_text("921600000\n")
    assert board.clock_facts()["jetson_clocks"] is True
    (root / "sys/devices/system/cpu/online").write_text("0-1\n")   # offline cores do not count
    (root / "sys/devices/system/cpu/cpu3/cpufreq/scaling_min_freq").write_text("102000\n")
    facts_now = board.clock_facts()
    assert facts_now["online_cores"] == [0, 1] and facts_now["jetson_clocks"] is True


def test_this_machine_says_what_it_is_and_leaves_the_jetson_fields_empty(monkeypatch, tmp_path):
    monkeypatch.delenv(ROOT_VARIABLE, raising=False)
    found = facts.collect(None, str(tmp_path))
    b = found["board"]
    assert (b["model"], b["chip"], b["l4t"], b["jetpack"], b["power_mode"], b["is_jetson"]) == (
        None, None, None, None, None, False)
    assert b["gpu"] is None and b["emc_mhz"] is None
    assert b["memory"]["ram_total_mb"] > 0 and len(b["online_cores"]) >= 1
    assert found["system"]["arch"] and found["system"]["os"] and found["board_root"] == "/"


@pytest.mark.parametrize("text, cpus", [("0-3", [0, 1, 2, 3]), ("0-1,4-5", [0, 1, 4, 5]), ("0", [0]), ("", None)])
def test_cpu_lists(text, cpus):
    assert board.parse_cpu_list(text) == cpus


def test_thermal_trip_points_are_the_lowest_passive_one_per_zone(tmp_path, monkeypatch):
    root = lay_out(tmp_path / "nano", "nano")
    zone = root / "sys/class/thermal/thermal_zone1"          # CPU-therm on the Nano
    for k, (kind, temp) in enumerate((("critical", "102000"), ("passive", "97000"), ("passive", "99000"))):
        (zone / f"trip_point_{k}_type").write_text(kind + "\n")
        (zone / f"trip_point_{k}_temp").write_text(temp + "\n")
    monkeypatch.setenv(ROOT_VARIABLE, str(root))
    assert board.thermal_trips() == {"CPU-therm": 97.0}
    assert facts.board_facts()["thermal_trips_c"] == {"CPU-therm": 97.0}


def test_fingerprints_follow_the_board_kind_and_its_software(on_board):
    from orchestrator.targets.facts import board_fingerprint as of_wire
    from orchestrator.targets.facts import board_kind
    from remote_agent.messages import Facts

    def board_fingerprint(found: dict) -> dict:  # each board's facts read strictly: the message fits the agent's
        return of_wire(Facts.from_wire(found, strict=True))
    nano, orin = on_board("nano"), on_board("orin_nano")
    assert board_kind(Facts.from_wire(nano)) == "NVIDIA Jetson Nano Developer Kit"
    assert board_fingerprint(nano) == board_fingerprint(json_copy(nano))         # stable: same facts, same digest
    assert board_fingerprint(nano)["kind"] != board_fingerprint(orin)["kind"]
    reflashed = json_copy(nano)
    reflashed["board"].update(l4t="32.7.4", jetpack="4.6.4")                      # same board, newer software
    reflashed["board"]["cpus"][0]["cur_mhz"] = 102.0                             # clocks never count
    assert board_fingerprint(reflashed)["kind"] == board_fingerprint(nano)["kind"]
    assert board_fingerprint(reflashed)["software"] != board_fingerprint(nano)["software"]
    warmer = json_copy(nano)
    warmer["board"]["temperatures_c"]["CPU-therm"] = 80.0
    assert board_fingerprint(warmer) == board_fingerprint(nano)


def json_copy(value: dict) -> dict:
    import json
    return json.loads(json.dumps(value))
