"""The board's state during a capture, sampled into the run folder (``board.jsonl``): tegrastats' own lines
where the board has it, else the same figures read from sysfs. One JSON object per line: ``{"t": unix time,
"line": tegrastats line}`` or ``{"t": ..., "record": {...}}`` with the fields of a parsed tegrastats line.

Python 3.6+, stdlib only. Started and stopped by the capture supervisor; tegrastats carries the run's mark
in its environment, so it never outlives the run.
"""
import json
import os
import re
import subprocess
import threading
import time
from typing import Any  # noqa: F401 (type comments)

from . import board, boardfs
from .facts import current_temperatures

FILE = "board.jsonl"
INTERVAL_MS = 200
HWMON_ROOT = "/sys/class/hwmon"
INA3221_IIO = "/sys/bus/i2c/drivers/ina3221x"
GPU_LOAD_FILES = ("/sys/devices/gpu.0/load", "/sys/devices/platform/gpu.0/load")


def parse_proc_stat(text):
    """/proc/stat -> {cpu number: (busy jiffies, total jiffies)}."""
    found = {}
    for line in (text or "").splitlines():
        match = re.match(r"^cpu(\d+)\s+(.*)$", line)
        if match:
            values = [int(v) for v in match.group(2).split()]
            idle = values[3] + (values[4] if len(values) > 4 else 0)
            found[int(match.group(1))] = (sum(values) - idle, sum(values))
    return found


def cpu_loads(before, after):
    """Per core, the busy share between two /proc/stat readings, in %."""
    loads = {}
    for cpu, (busy, total) in after.items():
        if cpu in before and total > before[cpu][1]:
            loads[cpu] = int(round(100.0 * (busy - before[cpu][0]) / (total - before[cpu][1])))
    return loads


def rails():
    """Power rails in mW: INA3221 over hwmon (JetPack 5+: in_label, mV x mA) or IIO (JetPack 4: in_power mW)."""
    found = {}
    for hwmon in sorted(boardfs.listdir(HWMON_ROOT)):
        base = "{}/{}/".format(HWMON_ROOT, hwmon)
        if (boardfs.read(base + "name") or "").strip() != "ina3221":
            continue
        for n in range(1, 8):
            label = (boardfs.read(base + "in{}_label".format(n)) or "").strip()
            volts = boardfs.read_int(base + "in{}_input".format(n))
            amps = boardfs.read_int(base + "curr{}_input".format(n))
            if label and "sum of" not in label and volts is not None and amps is not None:
                found[label] = int(volts * amps / 1000)
    for device in sorted(boardfs.listdir(INA3221_IIO)):
        for iio in sorted(d for d in boardfs.listdir("{}/{}".format(INA3221_IIO, device)) if d.startswith("iio:")):
            base = "{}/{}/{}/".format(INA3221_IIO, device, iio)
            for n in range(3):
                label = (boardfs.read(base + "rail_name_{}".format(n)) or "").strip()
                power = boardfs.read_int(base + "in_power{}_input".format(n))
                if label and power is not None:
                    found[label] = power
    return found


def sysfs_record(loads):
    """The fields of a tegrastats line, read from the board's files (None where it has no such file)."""
    cpus = board.current_cpu_clocks()
    memory = board.memory() or {}
    gpu = board.gpu_clock()
    emc = board.emc_mhz()
    gpu_load = None
    for candidate in GPU_LOAD_FILES:
        tenths = boardfs.read_int(candidate)
        if tenths is not None:
            gpu_load = int(round(tenths / 10.0))
            break
    return {
        "ram_used_mb": _used(memory.get("ram_total_mb"), memory.get("ram_available_mb")),
        "ram_total_mb": memory.get("ram_total_mb"),
        "swap_used_mb": _used(memory.get("swap_total_mb"), memory.get("swap_free_mb")),
        "swap_total_mb": memory.get("swap_total_mb"),
        "cpus": [None if c["online"] is False else {"load_pct": loads.get(c["cpu"]),
                                                     "freq_mhz": int(c["cur_mhz"]) if c["cur_mhz"] else None}
                 for c in cpus] or None,
        "emc_pct": None, "emc_freq_mhz": int(emc) if emc else None,
        "gr3d_pct": gpu_load, "gr3d_freq_mhz": int(gpu["cur_mhz"]) if gpu and gpu["cur_mhz"] else None,
        "temps_c": current_temperatures(),
        "rails_mw": {name: {"current": mw, "average": None} for name, mw in rails().items()},
    }


def _used(total, free):
    return total - free if total is not None and free is not None else None


class BoardSampler(object):
    """tegrastats (or sysfs) every INTERVAL_MS into run_dir/board.jsonl, from start() to stop()."""

    def __init__(self, run_dir, env=None, interval_ms=INTERVAL_MS):
        self.path = os.path.join(run_dir, FILE)
        self.env = env
        self.interval_ms = interval_ms
        self.source = None
        self.count = 0
        self.process = None  # type: Any
        self.done = threading.Event()
        self.thread = None
        self.out = None  # type: Any

    def start(self):
        tegrastats = boardfs.tool("tegrastats")
        self.out = open(self.path, "a")
        if tegrastats:
            self.source = "tegrastats"
            self.process = subprocess.Popen([tegrastats, "--interval", str(self.interval_ms)], stdin=subprocess.DEVNULL,
                                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                            universal_newlines=True, env=self.env)
            self.thread = threading.Thread(target=self._read_tegrastats)
        else:
            self.source = "sysfs"
            self.thread = threading.Thread(target=self._read_sysfs)
        self.thread.daemon = True
        self.thread.start()
        return self

    def _write(self, entry):
        self.out.write(json.dumps(entry) + "\n")
        self.out.flush()
        self.count += 1

    def _read_tegrastats(self):
        for line in self.process.stdout:
            if line.strip():
                self._write({"t": round(time.time(), 3), "line": line.strip()})

    def _read_sysfs(self):
        before = parse_proc_stat(boardfs.read("/proc/stat"))
        while not self.done.wait(self.interval_ms / 1000.0):
            now = parse_proc_stat(boardfs.read("/proc/stat"))
            try:
                self._write({"t": round(time.time(), 3), "record": sysfs_record(cpu_loads(before, now))})
            except (OSError, ValueError):
                pass  # a sample lost is no reason to disturb the capture
            before = now

    def stop(self):
        """Stop sampling; returns what run.json keeps of it."""
        self.done.set()
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.thread is not None:
            self.thread.join(timeout=5)
        if self.out is not None:
            self.out.close()
        return {"file": FILE, "source": self.source, "samples": self.count, "interval_ms": self.interval_ms}
