"""The messages that say what a board is and how it runs: the facts command's answer (the machine, the board, its
nsys) and the board's state between runs (clocks, power mode, temperatures, load). Standard library only, Python 3.6
syntax; messages.py, which every other message is in, gives them to the host."""
from typing import Dict, List, Optional

from .wire import Message


class PowerMode(Message):
    name: Optional[str] = None  # nvpmodel's name for it: MAXN, 10W, ...
    id: Optional[int] = None


class CurrentClocks(Message):
    """The clocks as they are: each CPU's (cpufreq's scaling_cur_freq) and the GPU's (devfreq's cur_freq), in MHz."""
    cpu_mhz: List[int] = []
    gpu_mhz: Optional[int] = None


class CpuClock(Message):
    """One core: online or not, its governor, and its limits and clock in MHz (cpufreq's kHz)."""
    cpu: int = 0
    online: Optional[bool] = None  # None: the board does not say
    governor: Optional[str] = None
    min_mhz: Optional[float] = None
    max_mhz: Optional[float] = None
    cur_mhz: Optional[float] = None


class GpuClock(Message):
    """The GPU's devfreq device: its governor, limits, clock and the clocks it can take, in MHz."""
    device: str = ""
    governor: Optional[str] = None
    min_mhz: Optional[float] = None
    max_mhz: Optional[float] = None
    cur_mhz: Optional[float] = None
    available_mhz: List[float] = []


class MemoryFacts(Message):
    """/proc/meminfo in MB (None: the line is not there)."""
    ram_total_mb: Optional[int] = None
    ram_available_mb: Optional[int] = None
    swap_total_mb: Optional[int] = None
    swap_free_mb: Optional[int] = None


class BoardState(Message):
    """What can change between two runs on one board: clocks, power mode, temperatures, load (read at ``at``,
    or ``error`` when it could not be)."""
    at: Optional[str] = None
    clocks: Optional[CurrentClocks] = None
    power_mode: Optional[PowerMode] = None
    temperatures_c: Optional[Dict[str, float]] = None
    load_average: Optional[List[float]] = None
    error: Optional[str] = None


class SystemFacts(Message):
    hostname: Optional[str] = None
    uid: Optional[int] = None
    user: Optional[str] = None
    kernel: Optional[str] = None
    arch: Optional[str] = None
    os: Optional[str] = None
    python: Optional[str] = None
    cpu_count: Optional[int] = None
    perf_event_paranoid: Optional[int] = None
    xvfb: Optional[str] = None  # the Xvfb a private display would run, if installed
    display_env: Optional[str] = None
    work_dir_free_mb: Optional[int] = None


class BoardFacts(Message):
    """What the board is and how it runs now (a PC's are mostly None)."""
    model: Optional[str] = None
    chip: Optional[str] = None
    l4t: Optional[str] = None
    jetpack: Optional[str] = None
    is_jetson: Optional[bool] = None  # None: facts from an agent that did not say
    power_mode: Optional[PowerMode] = None
    clocks: Optional[CurrentClocks] = None
    temperatures_c: Optional[Dict[str, float]] = None
    thermal_trips_c: Optional[Dict[str, float]] = None  # each zone's lowest passive trip point
    memory: Optional[MemoryFacts] = None
    cpus: List[CpuClock] = []
    online_cores: List[int] = []
    gpu: Optional[GpuClock] = None
    emc_mhz: Optional[float] = None
    jetson_clocks: Optional[bool] = None  # every online core and the GPU held at one clock


class NsysFacts(Message):
    path: Optional[str] = None
    version: Optional[str] = None
    tried: List[str] = []
    importer: Optional[str] = None
    imports_itself: bool = False
    used: Optional[bool] = None  # False: a run without nsys, which neither looked for it nor started it
    profile_options: Optional[Dict[str, List[str]]] = None  # the values this nsys's profile --help lists
    gpu_metrics_option: Optional[str] = None


class Facts(Message):
    """The facts command's answer, and preflight's facts: the machine, the board, its nsys."""
    system: SystemFacts = SystemFacts()
    board: BoardFacts = BoardFacts()
    nsys: NsysFacts = NsysFacts()
    board_root: Optional[str] = None
