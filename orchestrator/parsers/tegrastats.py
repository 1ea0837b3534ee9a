"""tegrastats lines, from every L4T release R28 to R39, into one sample each. Pure.

The line changed with nearly every release: ``cpu [17%,13%]@408`` (R28) or ``CPU [2%@345,off]``,
``EMC 1%@408``/``EMC_FREQ 0%``, ``GR3D_FREQ`` as ``0%``, ``0%@76``, ``0%@[114]``, ``12%@[1300,1300]`` or
``@[0,0,0]`` (no load), a timestamp first from R35, temperatures as ``GPU@41C``, ``gpu@47.6C/47.6C``
(R39) or ``-256C`` (zone powered off), rails without unit (``VDD_IN 2003/2658``, R32), with
``mW/mW`` (R35+) or three values (R39: the first two are kept), rail names that repeat (``NC`` on AGX
Orin). Whatever the line lacks is None; tokens it does not know go to ``other`` unchanged.
"""
from __future__ import annotations

import re
from datetime import datetime
from typing import Any

_TIME = re.compile(r"^(\d{2})-(\d{2})-(\d{4})$")
_CLOCK = re.compile(r"^\d{2}:\d{2}:\d{2}$")
_USED_TOTAL = re.compile(r"^(\d+)/(\d+)([kKMG]B)$")
_CPU_LIST = re.compile(r"^\[(.*)\](?:@(\d+))?$")
_CPU_ONE = re.compile(r"^(\d+)%(?:@(\d+))?$")
_LOAD_FREQ = re.compile(r"^(?:(\d+)%)?(?:@(?:\[([\d,\s]*)\]|(\d+)))?$")
_TEMP = re.compile(r"^([A-Za-z][\w.-]*)@(-?\d+(?:\.\d+)?)C(?:/(-?\d+(?:\.\d+)?)C)*$")
_RAIL = re.compile(r"^(\d+)(?:mW)?/(\d+)(?:mW)?(?:/(\d+)(?:mW)?)?$")
_NAME = re.compile(r"^[A-Za-z][\w-]*$")
_DETAIL_AFTER = re.compile(r"(?<=\S)\(")
EMC_NAMES = ("EMC", "EMC_FREQ")
GR3D_NAMES = ("GR3D", "GR3D_FREQ")
POWERED_OFF_C = -256.0
_MB = {"kB": 1 / 1024, "KB": 1 / 1024, "MB": 1, "GB": 1024}


def empty_sample() -> dict[str, Any]:
    return {"time": None, "ram_used_mb": None, "ram_total_mb": None, "swap_used_mb": None, "swap_total_mb": None,
            "cpus": None, "emc_pct": None, "emc_freq_mhz": None, "gr3d_pct": None, "gr3d_freq_mhz": None,
            "temps_c": {}, "rails_mw": {}, "other": {}}


def parse_line(line: str) -> dict[str, Any] | None:
    """One tegrastats line -> its sample; None for a line that is not tegrastats output (no RAM field)."""
    tokens = _DETAIL_AFTER.sub(" (", line).split()  # 'IRAM 0/252kB(lfb 252kB)': the detail is a token apart
    if "RAM" not in tokens:
        return None
    sample = empty_sample()
    i = 0
    if len(tokens) > 1 and _TIME.match(tokens[0]) and _CLOCK.match(tokens[1]):
        try:  # month-day-year, as tegrastats writes it
            sample["time"] = datetime.strptime(f"{tokens[0]} {tokens[1]}", "%m-%d-%Y %H:%M:%S").isoformat()
        except ValueError:
            sample["other"]["time"] = f"{tokens[0]} {tokens[1]}"
        i = 2
    while i < len(tokens):
        token = tokens[i]
        following = tokens[i + 1] if i + 1 < len(tokens) else ""
        if token.startswith("("):  # '(lfb 48x4MB)', '(cached 0MB)': details of the field before
            while i < len(tokens) and not tokens[i].endswith(")"):
                i += 1
            i += 1
            continue
        if token in ("RAM", "SWAP") and _USED_TOTAL.match(following):
            used, total, unit = _USED_TOTAL.match(following).groups()  # type: ignore[union-attr]
            key = token.lower()
            sample[f"{key}_used_mb"] = _mb(used, unit)
            sample[f"{key}_total_mb"] = _mb(total, unit)
            i += 2
            continue
        if token in ("CPU", "cpu") and following.startswith("["):
            sample["cpus"] = _cpus(following)
            i += 2
            continue
        if token in EMC_NAMES + GR3D_NAMES and _LOAD_FREQ.match(following) and following:
            load, freq = _load_freq(following)
            prefix = "emc" if token in EMC_NAMES else "gr3d"
            sample[f"{prefix}_pct"], sample[f"{prefix}_freq_mhz"] = load, freq
            i += 2
            continue
        temp = _TEMP.match(token)
        if temp:
            value = float(temp.group(2))
            sample["temps_c"][temp.group(1)] = None if value <= POWERED_OFF_C else value
            i += 1
            continue
        rail = _RAIL.match(following)
        if _NAME.match(token) and rail:
            name, n = token, 2
            while name in sample["rails_mw"]:  # AGX Orin names two rails 'NC'
                name = f"{token}#{n}"
                n += 1
            sample["rails_mw"][name] = {"current": int(rail.group(1)), "average": int(rail.group(2))}
            i += 2
            continue
        if _NAME.match(token) and following and not _NAME.match(following) and not _TEMP.match(following):
            sample["other"][token] = following  # 'APE 150', 'NVENC 79%@166', 'VIC_FREQ 115', 'NVENC0_FREQ @0'
            i += 2
            continue
        if _NAME.match(token) and following == "off":
            sample["other"][token] = "off"
            i += 2
            continue
        if token == "MTS" and i + 4 < len(tokens):  # 'MTS fg 0% bg 0%' (Denver's migration stats)
            sample["other"]["MTS"] = " ".join(tokens[i + 1:i + 5])
            i += 5
            continue
        sample["other"].setdefault("unparsed", []).append(token)
        i += 1
    return sample


def _mb(value: str, unit: str) -> float:
    number = int(value) * _MB.get(unit, 1)
    return int(number) if float(number).is_integer() else round(number, 3)


def _cpus(token: str) -> list[dict[str, int | None] | None] | None:
    """'[2%@345,off,1%@345]' or '[17%,13%]@408' (one clock for all, R28): a core that is off is None."""
    match = _CPU_LIST.match(token)
    if not match:
        return None
    shared = int(match.group(2)) if match.group(2) else None
    cores: list[dict[str, int | None] | None] = []
    for part in match.group(1).split(","):
        part = part.strip()
        one = _CPU_ONE.match(part)
        if part == "off" or not one:
            cores.append(None)
        else:
            cores.append({"load_pct": int(one.group(1)),
                          "freq_mhz": int(one.group(2)) if one.group(2) else shared})
    return cores


def _load_freq(token: str) -> tuple[int | None, int | None]:
    """'51%@307', '0%', '0%@[114]', '12%@[1300,1300]', '@[0,0,0]' -> (load %, clock MHz); of several
    clocks (one per GPC), the highest."""
    match = _LOAD_FREQ.match(token)
    if not match:
        return None, None
    load = int(match.group(1)) if match.group(1) else None
    if match.group(3):
        return load, int(match.group(3))
    clocks = [int(c) for c in (match.group(2) or "").split(",") if c.strip().isdigit()]
    return load, (max(clocks) if clocks else None)


def parse_tegrastats(text: str) -> list[dict[str, Any]]:
    """Every tegrastats line of a log, in order; other lines are skipped."""
    return [sample for sample in map(parse_line, text.splitlines()) if sample is not None]
