"""What boards print about themselves, on real text from L4T R28 to R39 (tests/data/jetson_samples.json):
tegrastats lines, 'jetson_clocks --show', 'nvpmodel -q', /etc/nv_tegra_release; and 'orchestrate parse'."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli

from orchestrator.errors import ParseError
from orchestrator.parsers.board_text import parse_board_text, parse_nv_tegra_release
from orchestrator.parsers.tegrastats import parse_line, parse_tegrastats
from remote_agent.board_text import parse_jetson_clocks_show

SAMPLES = {s["id"]: s for s in json.loads((Path(__file__).parent / "data" / "jetson_samples.json").read_text())}
KEYS = {"time", "ram_used_mb", "ram_total_mb", "swap_used_mb", "swap_total_mb", "cpus", "emc_pct", "emc_freq_mhz",
        "gr3d_pct", "gr3d_freq_mhz", "temps_c", "rails_mw", "other"}


def of_kind(kind: str) -> list[dict]:
    return [s for s in SAMPLES.values() if s["kind"] == kind]


def test_a_jetson_nano_line_of_r32_every_field():
    assert parse_line(SAMPLES["s022"]["text"]) == {
        "time": None, "ram_used_mb": 534, "ram_total_mb": 3964, "swap_used_mb": 5, "swap_total_mb": 1982,
        "cpus": [{"load_pct": 16, "freq_mhz": 204}, {"load_pct": 9, "freq_mhz": 204},
                 {"load_pct": 0, "freq_mhz": 204}, {"load_pct": 0, "freq_mhz": 204}],
        "emc_pct": 0, "emc_freq_mhz": 204, "gr3d_pct": 0, "gr3d_freq_mhz": 76,
        "temps_c": {"PLL": 34.0, "CPU": 36.5, "PMIC": 100.0, "GPU": 36.0, "AO": 39.5, "thermal": 36.25},
        "rails_mw": {"POM_5V_IN": {"current": 1022, "average": 1022}, "POM_5V_GPU": {"current": 0, "average": 0},
                     "POM_5V_CPU": {"current": 204, "average": 204}},
        "other": {"IRAM": "0/252kB", "APE": "25"}}


def test_a_tx1_line_of_r28_has_one_clock_for_all_cores_and_no_rails():
    record = parse_line(SAMPLES["s041"]["text"])
    assert record["cpus"] == [{"load_pct": p, "freq_mhz": 408} for p in (17, 13, 29, 5)]
    assert (record["emc_pct"], record["emc_freq_mhz"], record["gr3d_pct"], record["gr3d_freq_mhz"]) == (1, 408, 3, 76)
    assert (record["ram_used_mb"], record["swap_used_mb"], record["swap_total_mb"]) == (3468, 873, 8192)
    assert record["temps_c"] == {} and record["rails_mw"] == {} and record["time"] is None


def test_a_tx2_line_marks_offline_cores_as_none():
    record = parse_line(SAMPLES["s029"]["text"])
    assert record["cpus"] == [{"load_pct": 2, "freq_mhz": 345}, None, None, None, None, None]
    assert record["rails_mw"]["VDD_IN"] == {"current": 2003, "average": 2658}
    assert record["temps_c"]["AO"] == 35.5 and record["temps_c"]["PMIC"] == 100.0


def test_an_orin_nano_line_of_r36_with_its_timestamp_and_milliwatts():
    record = parse_line(SAMPLES["s053"]["text"])
    assert record["time"] == "2026-10-08T04:38:21"
    assert (record["ram_used_mb"], record["ram_total_mb"], record["swap_used_mb"], record["swap_total_mb"]) == (
        1343, 7620, 165, 3810)
    assert [c["freq_mhz"] for c in record["cpus"]] == [1497, 729, 729, 729, 729, 729]
    assert (record["emc_pct"], record["emc_freq_mhz"], record["gr3d_pct"], record["gr3d_freq_mhz"]) == (15, 204, 0, 305)
    assert record["temps_c"] == {"cpu": 48.562, "soc2": 46.593, "soc0": 48.625, "gpu": 49.625, "tj": 49.312,
                                 "soc1": 47.937}
    assert record["rails_mw"] == {"VDD_IN": {"current": 5251, "average": 8535},
                                  "VDD_CPU_GPU_CV": {"current": 512, "average": 1944},
                                  "VDD_SOC": {"current": 2720, "average": 3659}}
    assert record["other"] == {"NVDEC": "off", "NVJPG": "off", "VIC": "off", "OFA": "off", "APE": "200"}


def test_r38_thor_has_gpu_clocks_without_a_load():
    record = parse_line(SAMPLES["s008"]["text"])
    assert (record["gr3d_pct"], record["gr3d_freq_mhz"]) == (None, 0)
    assert len(record["cpus"]) == 14 and record["other"]["NVENC0_FREQ"] == "@0"
    assert record["rails_mw"]["VDD_CPU_SOC_MSS"] == {"current": 4165, "average": 4165}


def test_r39_two_temperatures_and_three_rail_values_keep_the_first_two():
    record = parse_line(SAMPLES["s015"]["text"])
    assert (record["gr3d_pct"], record["gr3d_freq_mhz"]) == (12, 1300)   # '12%@[1300,1300]'
    assert record["temps_c"] == {"cpu": 52.968, "soc2": 48.406, "soc0": 49.531, "gpu": 47.625}
    assert record["rails_mw"]["VDD_GPU_SOC"] == {"current": 5139, "average": 5139}
    assert record["swap_used_mb"] is None and record["emc_freq_mhz"] == 3199


def test_agx_xavier_rails_without_a_vdd_prefix_and_emc_without_a_clock():
    record = parse_line(SAMPLES["s052"]["text"])
    assert list(record["rails_mw"]) == ["GPU", "CPU", "SOC", "CV", "VDDRQ", "SYS5V"]
    assert (record["emc_pct"], record["emc_freq_mhz"]) == (0, None)
    assert (record["gr3d_pct"], record["gr3d_freq_mhz"]) == (0, None)


def test_powered_off_zones_repeated_rails_and_bracketed_clocks():
    line = ("RAM 2448/62840MB (lfb 2x4MB) CPU [0%@2201,off] GR3D_FREQ 0%@[114] CV0@-256C GPU@45.5C "
            "NC 0mW/0mW NC 12mW/10mW VDD_IN 5299mW/5299mW")
    record = parse_line(line)
    assert record["temps_c"] == {"CV0": None, "GPU": 45.5}
    assert record["rails_mw"] == {"NC": {"current": 0, "average": 0}, "NC#2": {"current": 12, "average": 10},
                                  "VDD_IN": {"current": 5299, "average": 5299}}
    assert (record["gr3d_pct"], record["gr3d_freq_mhz"]) == (0, 114)


@pytest.mark.parametrize("sample", of_kind("tegrastats"), ids=lambda s: s["id"])
def test_every_real_line_parses_its_memory_cores_and_clocks(sample):
    record = parse_line(sample["text"])
    assert set(record) == KEYS
    text = sample["text"]
    assert record["ram_total_mb"] == int(text.split("RAM ")[1].split("/")[1].split("MB")[0])
    bracket = text.split("[", 1)[1].split("]", 1)[0]
    assert len(record["cpus"]) == len(bracket.split(","))
    assert [c is None for c in record["cpus"]] == [p == "off" for p in bracket.split(",")]
    assert "unparsed" not in record["other"] or sample["truncated"], record["other"]
    if " SWAP " in text:
        assert record["swap_total_mb"] > 0
    if "mW" in text or "VDD_" in text or "POM_" in text:
        assert record["rails_mw"] and all(set(v) == {"current", "average"} for v in record["rails_mw"].values())


def test_a_log_skips_lines_that_are_not_tegrastats():
    text = "starting\n" + SAMPLES["s053"]["text"] + "\n\n" + SAMPLES["s055"]["text"] + "\nKilled\n"
    assert [r["time"] for r in parse_tegrastats(text)] == ["2026-10-08T04:38:21", "2025-11-30T13:26:01"]


def test_jetson_clocks_show_of_a_locked_nano():
    shown = parse_jetson_clocks_show(SAMPLES["s038"]["text"])
    assert (shown["soc_family"], shown["machine"], shown["online_cpus"]) == (
        "tegra210", "NVIDIA Jetson Nano Developer Kit", "0-3")
    assert shown["cpus"][0] == {"cpu": 0, "online": True, "governor": "schedutil", "min_khz": 1428000,
                                "max_khz": 1428000, "current_khz": 1428000}
    assert shown["gpu"] == {"min_hz": 921600000, "max_hz": 921600000, "current_hz": 921600000}
    assert shown["emc"] == {"min_hz": 204000000, "max_hz": 1600000000, "current_hz": 1600000000, "override": 1}
    assert shown["fan"] == "Fan: speed=255" and shown["power_mode"] == "MAXN" and shown["locked"] is True


@pytest.mark.parametrize("sample_id, locked, cores, governor", [
    ("s044", True, 4, "interactive"),     # R28.1 spells it 'Gonvernor'
    ("s045", False, 4, "schedutil"),
    ("s040", True, 4, "schedutil"),       # 5 W mode: two cores offline, the online ones held
    ("s119", False, 12, "schedutil"),
    ("s036", False, 6, "ondemand"),
])
def test_jetson_clocks_show_of_every_generation(sample_id, locked, cores, governor):
    shown = parse_jetson_clocks_show(SAMPLES[sample_id]["text"])
    assert shown["locked"] is locked and len(shown["cpus"]) == cores
    assert [c["cpu"] for c in shown["cpus"]] == list(range(cores))   # cpu10 sorted after cpu9
    assert {c["governor"] for c in shown["cpus"]} == {governor}


def test_offline_cores_do_not_count_against_a_lock():
    shown = parse_jetson_clocks_show(SAMPLES["s040"]["text"])
    assert [c["online"] for c in shown["cpus"]] == [True, True, False, False]
    assert shown["power_mode"] == "5W"


@pytest.mark.parametrize("sample", of_kind("nv_tegra_release"), ids=lambda s: s["id"])
def test_nv_tegra_release_gives_release_board_and_date(sample):
    found = parse_nv_tegra_release(sample["text"])
    assert found["l4t"] == sample["l4t"]
    assert found["board"] in ("t186ref", "generic")


def test_nv_tegra_release_fields_and_jetpack():
    found = parse_nv_tegra_release(SAMPLES["s056"]["text"])
    assert found == {"l4t": "32.7.1", "jetpack": "4.6.1", "board": "t186ref", "gcid": "29689809",
                     "date": "Wed Feb 2 21:33:23 UTC 2022"}


def test_text_of_another_tool_is_a_parse_error():
    with pytest.raises(ParseError) as raised:
        parse_board_text("jetson-clocks", SAMPLES["s022"]["text"], "x.txt")
    assert raised.value.one_line() == ("x.txt holds no 'jetson_clocks --show' output (give the saved output of that "
                                       "tool to 'parse jetson-clocks')")


def test_parse_tegrastats_json_prints_one_object_per_line(tmp_path):
    log = tmp_path / "tegrastats.log"
    log.write_text("\n".join(SAMPLES[i]["text"] for i in ("s022", "s053", "s015")) + "\n")
    done = run_cli("parse", "tegrastats", str(log), "--json")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [line["ram_total_mb"] for line in lines] == [3964, 7620, 62817]
    assert lines[1] == parse_line(SAMPLES["s053"]["text"])
    table = run_cli("parse", "tegrastats", str(log))
    assert table.returncode == 0 and "POM_5V_IN=1022" in table.stdout


@pytest.mark.parametrize("name, sample_id, expected", [
    ("nvpmodel", "s084", {"name": "MODE_30W_4CORE", "id": 5}),
    ("nv-tegra-release", "s031", {"l4t": "36.4.3", "jetpack": "6.2", "board": "generic", "gcid": "38968081",
                                  "date": "Wed Jan 8 01:49:37 UTC 2025"}),
])
def test_parse_board_files_from_the_command_line(tmp_path, name, sample_id, expected):
    saved = tmp_path / "saved.txt"
    saved.write_text(SAMPLES[sample_id]["text"])
    done = run_cli("parse", name, str(saved), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == expected
    wrong = run_cli("parse", "jetson-clocks", str(saved))
    assert wrong.returncode == 19 and wrong.stderr.startswith("error: ") and "jetson_clocks --show" in wrong.stderr
