"""Pull throughput on loopback: orchestrate's verified pull against OpenSSH scp, in the same run.

Starts a real sshd on 127.0.0.1 (generated keys, root by key), writes a random file into the agent's work
dir, then alternates, for a few rounds:
- scp (the baseline): what one types by hand, OpenSSH's defaults, a fresh connection;
- verified pull: orchestrate's whole pull as a run does it, over the run's open connection: the board
  hashes while it sends, this machine hashes while it receives, both sha256 compared, partial file renamed;
- verified pull, cold: the same with the master connection set up inside the timing (as a first pull);
- resumed pull: the same after a transfer cut at half the file (only the rest travels);
- scp with the cipher order the pull uses (AES-GCM first), for information: how much of the gain is the
  cipher's.
It prints medians and their ratios to scp; the target is a verified pull at 0.9x scp or better.
On a 2-core loopback the two hashes compete with both ends' encryption for the same cores; on a board
and a host each side has its own.

    python bench/pull_throughput.py [--size-mb 512] [--rounds 5]
"""
from __future__ import annotations

import argparse
import functools
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from sshd_server import make_sshd  # noqa: E402

from orchestrator.inventory.hosts import Host  # noqa: E402
from orchestrator.runs.pull import partial_path, pull_verified  # noqa: E402
from orchestrator.targets.agent import RemoteAgent, deploy_agent  # noqa: E402
from orchestrator.targets.connect import open_transport  # noqa: E402
from orchestrator.targets.openssh import PREFERRED_CIPHERS  # noqa: E402
from orchestrator.targets.settings import ConnectOptions  # noqa: E402

TARGET_RATIO = 0.90


def timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="orchestrate-bench-") as scratch:
        root = Path(scratch)
        server = make_sshd(root / "sshd")
        server.start()
        host = Host(name="bench", address="127.0.0.1", port=server.port, user="root",
                    key_file=str(server.client_key), work_dir=str(root / "board"))
        options = ConnectOptions(server.ssh_config, server.known_hosts)
        transport = open_transport(host, options)
        agent = deploy_agent(transport, host)
        source = Path(agent.work_dir) / "report.bin"
        with open(source, "wb") as handle:
            for _ in range(args.size_mb):
                handle.write(os.urandom(2**20))
        scp = ["scp", "-q", "-P", str(server.port), "-i", str(server.client_key), "-F", str(server.ssh_config),
               "-o", f"UserKnownHostsFile={server.known_hosts}", "-o", "StrictHostKeyChecking=yes",
               f"root@127.0.0.1:{source}"]
        target = root / "host"
        target.mkdir()
        times: dict[str, list[float]] = {"scp (baseline)": [], "verified pull": [], "verified pull, cold": [],
                                          "resumed pull (half left)": [], "scp, AES-GCM first (info)": []}
        scp_gcm = scp[:1] + ["-o", f"Ciphers={PREFERRED_CIPHERS}"] + scp[1:]

        def pull(into: Path, with_agent: RemoteAgent = agent) -> None:
            pull_verified(with_agent, {str(source): into})

        try:
            pull(target / "warm.bin")  # the run's connection is up before its pull, as in a real run
            (target / "warm.bin").unlink()
            for _ in range(args.rounds):
                times["scp (baseline)"].append(timed(lambda: subprocess.run(scp + [str(target / "scp.bin")],
                                                                             check=True)))
                times["verified pull"].append(timed(lambda: pull(target / "pulled.bin")))
                times["scp, AES-GCM first (info)"].append(timed(lambda: subprocess.run(
                    scp_gcm + [str(target / "scp.bin")], check=True)))
                cold = open_transport(host, options)
                cold_agent = RemoteAgent(cold, agent.python, agent.archive, agent.work_dir, agent.sha256,
                                         agent.version, True)
                times["verified pull, cold"].append(timed(functools.partial(pull, target / "cold.bin", cold_agent)))
                cold.close()
                half = partial_path(target / "resumed.bin")
                with open(source, "rb") as whole, open(half, "wb") as part:
                    part.write(whole.read(args.size_mb * 2**19))
                times["resumed pull (half left)"].append(timed(lambda: pull(target / "resumed.bin")))
                for name in ("scp.bin", "pulled.bin", "cold.bin", "resumed.bin"):
                    (target / name).unlink()
        finally:
            transport.close()
            server.stop()
    size = args.size_mb
    baseline = statistics.median(times["scp (baseline)"])
    print(f"file: {size} MB random, loopback sshd, {args.rounds} rounds, medians")
    for label, measured in times.items():
        median = statistics.median(measured)
        print(f"{label:28} {size / median:8.1f} MB/s   ratio to scp {baseline / median:5.2f}")
    ratio = baseline / statistics.median(times["verified pull"])
    verdict = "met" if ratio >= TARGET_RATIO else "NOT met"
    print(f"verified pull: {ratio:.2f}x scp (target {TARGET_RATIO:.2f}x): {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
