"""A board behind a link of its own: a network namespace joined to this machine by a veth pair, with the
board's sending rate capped (so a transfer lasts long enough to cut) and the link cut and restored at
will, as Wi-Fi drops do. Addresses are the namespace's own, made here for the test."""
from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


@dataclass
class BoardLink:
    name: str
    host_side: str
    board_side: str
    host_address: str
    board_address: str

    def cut(self) -> None:
        _ip("link", "set", self.host_side, "down")

    def restore(self) -> None:
        _ip("link", "set", self.host_side, "up")

    def remove(self) -> None:
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True)
        subprocess.run(["ip", "link", "del", self.host_side], capture_output=True)


def make_board_link(rate: str = "8mbit", kind: str = "board") -> BoardLink:
    """kind: 'board' (a board behind a slow link) or 'lab' (a lab network behind a bastion): each its own names
    and subnet, so that one worker may have both up at once."""
    tag = f"{os.getpid() % 10000}"
    letter, network = {"board": ("r", "10.251"), "lab": ("l", "10.252")}[kind]
    # each test worker (gw0, gw1, ...) a subnet of its own: two workers' links are up at once
    subnet = 7 + int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").lstrip("gw") or 0)
    link = BoardLink(name=f"orch-{kind}-{tag}", host_side=f"o{letter}h{tag}", board_side=f"o{letter}b{tag}",
                     host_address=f"{network}.{subnet}.1", board_address=f"{network}.{subnet}.2")
    link.remove()  # what a crashed run of the same pid left
    _ip("netns", "add", link.name)
    _ip("link", "add", link.host_side, "type", "veth", "peer", "name", link.board_side)
    _ip("link", "set", link.board_side, "netns", link.name)
    _ip("addr", "add", f"{link.host_address}/30", "dev", link.host_side)
    _ip("link", "set", link.host_side, "up")
    inside = ["netns", "exec", link.name, "ip"]
    _ip(*inside, "addr", "add", f"{link.board_address}/30", "dev", link.board_side)
    _ip(*inside, "link", "set", link.board_side, "up")
    _ip(*inside, "link", "set", "lo", "up")
    subprocess.run(["ip", "netns", "exec", link.name, "tc", "qdisc", "add", "dev", link.board_side, "root", "tbf",
                    "rate", rate, "burst", "32kbit", "latency", "400ms"], check=True, capture_output=True)
    return link
