"""The board's power modes (/etc/nvpmodel.conf) and which switches need a reboot.

nvpmodel writes each mode's settings to sysfs. The GPU's power-gating masks (TPC, FBP, GPC) cannot be written
once the GPU has run since boot (its "golden context" exists: the driver answers EBUSY or ENODEV); then
``nvpmodel -m N`` prints "Reboot required for changing to this power mode" and asks "DO YOU WANT TO REBOOT NOW?
enter YES/yes to confirm:" on its standard input. Without a terminal it reads no answer, declines, and
("NVPM ERROR: optMask is 1, no request for power mode") leaves the mode as it was. Such a mode is refused
before a run, and nvpmodel's own words are read after each switch, whatever its exit status.

Python 3.6+, stdlib only.
"""
import re

from . import boardfs

CONF = "/etc/nvpmodel.conf"
GPU_GATING = ("TPC_POWER_GATING", "FBP_POWER_GATING", "GPC_POWER_GATING")
_SECTION = re.compile(r"^<\s*(\w+)\s*(.*?)\s*>$")
_ATTRIBUTE = re.compile(r"(\w+)=(\S+)")
REBOOT_WORDS = ("Reboot required", "DO YOU WANT TO REBOOT")


def parse_conf(text):
    """nvpmodel.conf -> {"default": id, "modes": {id: {"name": NAME, "settings": {"PARAM ARG": "value"}}}}."""
    modes, default, current = {}, None, None  # type: dict, int | None, int | None
    for raw in (text or "").splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        section = _SECTION.match(line)
        if section:
            attributes = dict(_ATTRIBUTE.findall(section.group(2)))
            current = None
            if section.group(1) == "POWER_MODEL" and attributes.get("ID", "").isdigit():
                current = int(attributes["ID"])
                modes[current] = {"name": attributes.get("NAME"), "settings": {}}
            elif section.group(1) == "PM_CONFIG" and attributes.get("DEFAULT", "").isdigit():
                default = int(attributes["DEFAULT"])
            continue
        parts = line.split()
        if current is not None and len(parts) >= 3:
            modes[current]["settings"][parts[0] + " " + parts[1]] = " ".join(parts[2:])
    return {"default": default, "modes": modes}


def read_conf():
    text = boardfs.read(CONF)
    return parse_conf(text) if text else None


def gating(mode):
    return {key: value for key, value in mode["settings"].items() if key.split()[0] in GPU_GATING}


def _named(mode_id, mode):
    return "{} ({})".format(mode_id, mode["name"]) if mode and mode.get("name") else str(mode_id)


def unknown_mode(conf, target_id):
    """Why there is no mode target_id to switch to, else None."""
    if target_id in conf["modes"]:
        return None
    return "there is no power mode {} in {} (its modes: {})".format(
        target_id, CONF, ", ".join(_named(i, m) for i, m in sorted(conf["modes"].items())) or "none")


def switch_problem(conf, current_id, target_id):
    """Why 'nvpmodel -m target_id' cannot be done without a reboot, else None (also when either mode is
    unknown). Only what the target mode sets is written: a mask it does not name stays as it is."""
    modes = conf["modes"]
    if target_id not in modes or current_id not in modes or current_id == target_id:
        return None
    before, after = gating(modes[current_id]), gating(modes[target_id])
    changed = sorted(key for key in after if before.get(key) != after[key])
    if not changed:
        return None
    return ("mode {} sets {} where the current mode {} has {}: the GPU's power gating changes only at boot, so "
            "nvpmodel would ask to reboot the board").format(
        _named(target_id, modes[target_id]), ", ".join("{} {}".format(k, after.get(k, "unset")) for k in changed),
        _named(current_id, modes[current_id]), ", ".join("{} {}".format(k, before.get(k, "unset")) for k in changed))


def switchable_modes(conf, current_id):
    """The modes reachable from current_id without a reboot."""
    return [i for i in sorted(conf["modes"]) if switch_problem(conf, current_id, i) is None]


def refused_switch(output):
    """nvpmodel's output says it did not switch (a reboot asked and declined, or an error), whatever its exit
    status: the line that says why, else None."""
    lines = [line.strip() for line in (output or "").splitlines() if line.strip()]
    for line in lines:
        if any(words in line for words in REBOOT_WORDS):
            return line
    errors = [line for line in lines if line.startswith("NVPM ERROR")]
    return errors[0] if errors else None
