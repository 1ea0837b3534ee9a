"""The leases' rules, pure: which board a host is, which waiting request gets which board, and which leases
have lost their holder."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..inventory.host import DEFAULT_PORT, Host

# a holder renews its lease every HEARTBEAT_S; one silent for STALE_S is gone (killed, frozen, cut off)
HEARTBEAT_S = 3.0
STALE_S = 15.0
QUARANTINE_AFTER = 3  # preflight or connection failures in a row that quarantine a board


def board_key(host: Host, local_machine: str) -> str:
    """What names a board to every process that shares it, whatever an inventory calls it: the address ssh reaches
    (and the jump host it goes through), or this machine's name for a local target."""
    if host.is_local:
        return f"local:{local_machine}"
    key = f"{(host.address or host.name).lower()}:{host.port or DEFAULT_PORT}"
    return f"{key} via {host.proxy_jump}" if host.proxy_jump else key


@dataclass(frozen=True)
class Waiting:
    """A request in the queue: its place (the database's id, in request order) and the boards it would take."""
    id: int
    candidates: tuple[str, ...]


def grants(waiting: Iterable[Waiting], held: set[str], quarantined: set[str]) -> dict[int, str]:
    """Oldest request first, each takes the first of its boards that nobody holds, that is not quarantined and
    that no older request took: a board goes to the requests that want it in the order they asked."""
    taken = set(held)
    granted: dict[int, str] = {}
    for request in sorted(waiting, key=lambda w: w.id):
        board = next((b for b in request.candidates if b not in taken and b not in quarantined), None)
        if board is not None:
            granted[request.id] = board
            taken.add(board)
    return granted


def is_stale(heartbeat_at: float, now: float) -> bool:
    return now - heartbeat_at > STALE_S


def queue_ahead(waiting: Sequence[Waiting], own: Waiting, board: str) -> int:
    """How many older requests wait for ``board`` before ``own``."""
    return sum(1 for w in waiting if w.id < own.id and board in w.candidates)
