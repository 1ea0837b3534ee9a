"""Reading an inventory of many hosts: `orchestrate targets --json` against `ansible-inventory --list` on the same
file, in the same run (target: orchestrate at most 1.5x Ansible's own listing).

The inventory is written the way a lab writes one: HOSTS boards in groups of groups (a farm group per board kind,
a lab group per room, one host in two groups), all: vars, group vars with a template, team variables, and a
group_vars/ folder beside the file. orchestrate reads it with Ansible's own code and then renders each host's
connection values as a play would (Ansible's listing renders none); both are whole processes, started cold.
Rounds alternate the two; medians and their ratio are printed.

    python bench/inventory_read.py [--hosts 500] [--rounds 5]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def write_inventory(folder: Path, hosts: int) -> Path:
    kinds = ["nano", "xavier", "orin"]
    farms: dict[str, dict] = {kind: {"hosts": {}, "vars": {"jetson_kind": kind}} for kind in kinds}
    labs: dict[str, dict] = {f"lab_{room}": {"hosts": {}} for room in "abcd"}
    for n in range(hosts):
        kind, name = kinds[n % 3], f"{kinds[n % 3]}{n:04d}.farm.example"
        farms[kind]["hosts"][name] = {"ansible_host": f"198.51.{n // 250}.{n % 250 + 1}",
                                      **({"ansible_port": 2200 + n % 7} if n % 5 == 0 else {})}
        labs[f"lab_{'abcd'[n % 4]}"]["hosts"][name] = None
    inventory = {"all": {
        "vars": {"ansible_user": "nvidia", "ansible_become": True, "team": "perf", "jetpack": "5.1"},
        "children": {"jetson": {"children": farms,
                                "vars": {"ansible_ssh_private_key_file": "~/.ssh/{{ jetson_kind }}_ed25519"}},
                     **labs}}}
    path = folder / "hosts.yml"
    path.write_text(yaml.safe_dump(inventory))
    (folder / "group_vars").mkdir(exist_ok=True)
    (folder / "group_vars" / "lab_b.yml").write_text("ansible_ssh_common_args: -o ProxyJump=ops@bastion-b\n")
    return path


def timed(command: list[str], env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO, check=True)
    return time.perf_counter() - start, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="orchestrate-inventory-bench-") as tmp:
        folder = Path(tmp)
        path = write_inventory(folder, args.hosts)
        env = dict(os.environ, PYTHONWARNINGS="ignore", ANSIBLE_HOME=str(folder / "ansible-home"),
                   PYTHONPATH=str(REPO))
        theirs_cmd = [str(BIN / "ansible-inventory"), "-i", str(path), "--list"]
        ours_cmd = [sys.executable, "-m", "orchestrator", "targets", "--json", "--inventory", str(path)]
        theirs_s, ours_s = [], []
        for _ in range(args.rounds):
            seconds, out = timed(theirs_cmd, env)
            theirs_s.append(seconds)
            listed = len(json.loads(out)["_meta"]["hostvars"])
            seconds, out = timed(ours_cmd, env)
            ours_s.append(seconds)
            read = json.loads(out)
            assert len(read["hosts"]) == listed == args.hosts, (len(read["hosts"]), listed)
        theirs, ours = statistics.median(theirs_s), statistics.median(ours_s)
        print(f"{args.hosts} hosts, {args.rounds} rounds each, alternating")
        print(f"ansible-inventory --list       median {theirs:.2f} s  ({', '.join(f'{s:.2f}' for s in theirs_s)})")
        print(f"orchestrate targets --json     median {ours:.2f} s  ({', '.join(f'{s:.2f}' for s in ours_s)})")
        print(f"ratio orchestrate / ansible-inventory: {ours / theirs:.2f}x (target: 1.5x or less)")


if __name__ == "__main__":
    main()
