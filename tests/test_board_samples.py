"""The board's samples during a capture: reading board.jsonl, the validity flags, and the energy of each frame.
Streams are built from real tegrastats lines (tests/data/jetson_samples.json); where a test needs a throttle,
it says which figures of the real line it changed."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from orchestrator.analysis.analyzers.energy import energy_per_frame_mj
from orchestrator.documents.run import RunDocument
from orchestrator.documents.run_sections import Flag
from orchestrator.documents.summary_sections import SummaryFrames
from orchestrator.figures.board import board_section, energy_section
from orchestrator.figures.board_samples import parse_board_samples, series, total_power_mw
from orchestrator.figures.validity import validity_flags

SAMPLES = {s["id"]: s for s in json.loads((Path(__file__).parent / "data" / "jetson_samples.json").read_text())}
NANO, XAVIER_NX, AGX_ORIN = SAMPLES["s022"]["text"], SAMPLES["s024"]["text"], SAMPLES["s027"]["text"]


def run_document(**sections: object) -> RunDocument:
    """A run.json with these sections, as a run folder's reader gives it."""
    return RunDocument.from_json({"run_id": "r", "started_at": "2026-12-01T00:00:00+00:00", **sections})


def stream(lines: list[str], start: float = 1_800_000_000.0, every: float = 0.2) -> str:
    return "\n".join(json.dumps({"t": start + i * every, "line": line}) for i, line in enumerate(lines)) + "\n"


def throttled(line: str, cpu_mhz: int, cpu_c: float) -> str:
    """The real Xavier NX line with its CPU clocks and CPU temperature changed, as a throttle changes them."""
    return line.replace("@1190", f"@{cpu_mhz}").replace("@1267", f"@{cpu_mhz}").replace("CPU@43.5C", f"CPU@{cpu_c}C")


def test_board_jsonl_reads_tegrastats_lines_and_sysfs_records_in_time_order():
    text = (json.dumps({"t": 10.4, "record": {"cpus": [{"load_pct": 50, "freq_mhz": None}], "ram_used_mb": 900}})
            + "\nnot json\n" + json.dumps({"t": 10.2, "line": NANO}) + "\n" + json.dumps({"line": NANO}) + "\n")
    samples = parse_board_samples(text)
    assert [s["t"] for s in samples] == [10.2, 10.4]
    assert samples[0]["ram_total_mb"] == 3964 and samples[0]["rails_mw"]["POM_5V_IN"]["current"] == 1022
    assert samples[1]["ram_used_mb"] == 900 and samples[1]["gr3d_pct"] is None and samples[1]["temps_c"] == {}


@pytest.mark.parametrize("line, rail, mw", [
    (NANO, "POM_5V_IN", 1022.0),
    (XAVIER_NX, "VDD_IN", 4067.0),
    (AGX_ORIN, "sum of VDD_CPU_CV, VDD_GPU_SOC, VIN_SYS_5V0", 988.0 + 4940.0 + 4442.0),   # no input rail: the sum
])
def test_the_module_power_is_its_input_rail_else_every_rail(line, rail, mw):
    [sample] = parse_board_samples(stream([line]))
    assert total_power_mw(sample) == (rail, mw)


def test_a_steady_stream_raises_no_flag():
    samples = parse_board_samples(stream([XAVIER_NX] * 10))
    assert validity_flags(run_document(), samples) == []


def test_a_throttle_drops_the_clocks_and_reaches_the_thermal_limit():
    lines = [XAVIER_NX] * 4 + [throttled(XAVIER_NX, mhz, c) for mhz, c in ((1190, 80.5), (1036, 93.0), (806, 96.5))]
    flags = validity_flags(run_document(), parse_board_samples(stream(lines)))
    assert [flag.as_json() for flag in flags] == [
        {"code": "clocks_dropped", "what": "the CPU clock dropped from 1267 to 806 MHz, 1.2 s into the capture"},
        {"code": "thermal_limit", "what": "CPU reached 93 C (its limit: 95 C), 1.0 s into the capture"}]


def test_the_zones_own_trip_point_wins_and_the_pmic_never_counts():
    line = XAVIER_NX.replace("CPU@43.5C", "CPU@88C")   # PMIC@100C stays, as on every Nano and Xavier
    samples = parse_board_samples(stream([line]))
    assert validity_flags(run_document(), samples) == []
    record = {"facts": {"board": {"thermal_trips_c": {"CPU-therm": 89.5, "GPU-therm": 89.5}}}}
    assert [f.code for f in validity_flags(run_document(**record), samples)] == ["thermal_limit"]


def test_an_idle_gpu_lowering_its_clock_is_no_drop_but_a_busy_one_is():
    busy = SAMPLES["s024"]["text"]                                  # GR3D_FREQ 62%@306
    idle = busy.replace("GR3D_FREQ 62%@306", "GR3D_FREQ 0%@114")
    assert validity_flags(run_document(), parse_board_samples(stream([busy, idle, busy]))) == []
    slowed = busy.replace("GR3D_FREQ 62%@306", "GR3D_FREQ 99%@204")
    assert validity_flags(run_document(), parse_board_samples(stream([busy, slowed]))) == [
        Flag(code="clocks_dropped",
             what="the GPU clock dropped from 306 to 204 MHz while busy, 0.2 s into the capture")]


def test_a_power_mode_change_between_before_and_after():
    record = {"board_state": {"before": {"power_mode": {"name": "MAXN", "id": 0}},
                              "after": {"power_mode": {"name": "5W", "id": 1}}}}
    assert validity_flags(run_document(**record)) == [
        Flag(code="power_mode_changed", what="the power mode changed during the run: MAXN (0) -> 5W (1)")]


def test_energy_of_constant_and_stepped_power_is_exact():
    t = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert energy_per_frame_mj(t, [5000.0] * 6, np.array([0.1, 0.5]), np.array([0.11, 0.52])) == \
        pytest.approx([50.0, 100.0])                                 # 5 W for 10 ms and for 20 ms
    stepped = [1000.0, 1000.0, 3000.0, 3000.0, 3000.0, 3000.0]       # 1 W until 0.4 s, then 3 W
    assert energy_per_frame_mj(t, stepped, np.array([0.39, 0.0]), np.array([0.41, 1.0])) == \
        pytest.approx([10.0 + 30.0, 1000.0 * 0.4 + 3000.0 * 0.6])
    outside = energy_per_frame_mj(t, stepped, np.array([-0.1, 0.95]), np.array([0.05, 1.05]))
    assert outside == [None, None]                                   # never a guess past the samples


def test_energy_section_puts_each_steady_frame_on_the_board_clock():
    epoch_ns = 1_800_000_000 * 10**9
    lines = [NANO.replace("POM_5V_IN 1022/1022", f"POM_5V_IN {mw}/{mw}") for mw in (2000, 2000, 4000, 4000, 4000)]
    samples = parse_board_samples(stream(lines, start=1_800_000_000.0))
    # frames on the report's clock: 0 is the session start (= the first sample here); frame 0 and one
    # warm-up frame are left out, the rest are 50 ms each
    frames = SummaryFrames.from_json({
        "per_frame_ns": [90_000_000, 60_000_000] + [50_000_000] * 10,
        "frame_starts_ns": [0, 90_000_000] + [150_000_000 + i * 50_000_000 for i in range(10)],
        "warmup": {"frames": 1}})
    section = energy_section(samples, frames, epoch_ns)
    assert section is not None and section.rail == "POM_5V_IN" and section.frames == 10
    # samples every 0.2 s from the session start: 2 W until 0.4 s, 4 W after; steady frames of 50 ms from 0.15 s
    assert section.per_frame_mj == pytest.approx([100.0] * 5 + [200.0] * 5)
    assert section.median_mj == pytest.approx(150.0) and section.mean_power_mw == pytest.approx(3200.0)
    assert energy_section(samples, frames, None) is None and energy_section([], frames, epoch_ns) is None


def test_the_series_the_report_draws_are_on_the_report_clock():
    samples = parse_board_samples(stream([NANO, NANO], start=1000.5))
    section = board_section(samples, "tegrastats", 1000 * 10**9)
    assert section is not None and section.samples == 2 and section.source == "tegrastats"
    drawn = section.series_ns or {}
    assert drawn["power_mw"] == [[500_000_000, 1022.0], [700_000_000, 1022.0]]
    assert drawn["cpu_mhz"][0] == [500_000_000, 204.0]
    assert drawn["temp_c"][0] == [500_000_000, 39.5]      # AO, the PMIC's 100 C left out
    assert set(series(samples)) == {"cpu_mhz", "cpu_load_pct", "gpu_pct", "gpu_mhz", "temp_c", "power_mw"}
