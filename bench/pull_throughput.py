"""Pull throughput on loopback: orchestrate's SFTP download and verified pull against OpenSSH scp.

Starts a real sshd on 127.0.0.1 (generated keys, root by key), writes a random file, then alternates
`scp` and orchestrate's transfers for a few rounds and prints medians and ratios to scp:
- transport.get: the SFTP download alone (the target: within 10 % of scp, ratio >= 0.90);
- pull phase: download plus the host's sha256 of the growing file, board hash already known;
- board sha256 + pull phase: everything, the target hashing its copy first.
On a 2-core loopback the hashes compete with encryption for the same cores; on a board they do not.

    python bench/pull_throughput.py [--size-mb 512] [--rounds 3]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from sshd_server import make_sshd  # noqa: E402

from orchestrator.inventory.hosts import Host  # noqa: E402
from orchestrator.runs.pull import board_checksums, pull_verified  # noqa: E402
from orchestrator.targets.agent import deploy_agent  # noqa: E402
from orchestrator.targets.transport import ConnectOptions, open_transport  # noqa: E402


def timed(action) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="orchestrate-bench-") as scratch:
        root = Path(scratch)
        server = make_sshd(root / "sshd")
        server.start()
        work = root / "board"
        work.mkdir(mode=0o700)
        source = work / "report.bin"
        with open(source, "wb") as handle:
            for _ in range(args.size_mb):
                handle.write(os.urandom(2**20))
        host = Host(name="bench", address="127.0.0.1", port=server.port, user="root",
                    key_file=str(server.client_key), work_dir=str(work))
        transport = open_transport(host, ConnectOptions(server.ssh_config, server.known_hosts))
        agent = deploy_agent(transport, host)
        scp = ["scp", "-q", "-P", str(server.port), "-i", str(server.client_key), "-F", str(server.ssh_config),
               "-o", f"UserKnownHostsFile={server.known_hosts}", "-o", "StrictHostKeyChecking=yes",
               f"root@127.0.0.1:{source}"]
        scp_times, get_times, pull_times, whole_times = [], [], [], []
        try:
            for _ in range(args.rounds):
                target = root / "host"
                target.mkdir(exist_ok=True)
                scp_times.append(timed(lambda: subprocess.run(scp + [str(target / "scp.bin")], check=True)))
                get_times.append(timed(lambda: transport.get(str(source), target / "get.bin")))
                sums = board_checksums(agent, [str(source)])
                pull_times.append(timed(lambda: pull_verified(agent, {str(source): target / "pulled.bin"}, sums)))
                whole_times.append(timed(lambda: pull_verified(agent, {str(source): target / "whole.bin"})))
                for name in ("scp.bin", "get.bin", "pulled.bin", "whole.bin"):
                    (target / name).unlink()
        finally:
            transport.close()
            server.stop()
    size = args.size_mb
    scp_rate = size / statistics.median(scp_times)
    print(f"file: {size} MB random, loopback sshd, {args.rounds} rounds, medians")
    for label, times in (("scp (baseline)", scp_times), ("transport.get (SFTP)", get_times),
                         ("pull phase (sha256 here)", pull_times),
                         ("board sha256 + pull phase", whole_times)):
        rate = size / statistics.median(times)
        print(f"{label:34} {rate:8.1f} MB/s   ratio to scp {rate / scp_rate:5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
