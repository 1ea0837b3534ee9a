"""What ``orchestrate boards`` shows: who holds each board and who waits for it, the quarantined boards and the
boards' history of failures; and bringing a quarantined board back."""
from __future__ import annotations

import socket
from dataclasses import dataclass, field
from typing import Any

from ..database.connection import Database
from ..inventory.hosts import Inventory
from . import ledger
from .lease import holder_name
from .queue import Waiting, board_key, is_stale, queue_ahead


@dataclass
class Overview:
    held: list[dict[str, Any]] = field(default_factory=list)       # one per board held, with its queue
    waiting: list[dict[str, Any]] = field(default_factory=list)    # every request waiting, in request order
    health: list[dict[str, Any]] = field(default_factory=list)     # every board with a failure or a quarantine
    events: list[dict[str, Any]] = field(default_factory=list)     # the newest events, oldest first
    hosts: dict[str, list[str]] = field(default_factory=dict)      # a board shown -> its inventory host names

    def as_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def overview(database: Database, board: str | None = None, events: int = 20,
             inventory: Inventory | None = None) -> Overview:
    """The leases, health and history (of ``board`` alone, when given); with an inventory, the host names each board
    shown has there."""
    rows = ledger.lease_rows(database)
    now = ledger.clock(database)
    waiting = [Waiting(r.id, r.candidates) for r in rows if r.state == ledger.WAITING]
    shown = Overview()
    for row in rows:
        if board is not None and (row.board != board if row.state == ledger.HELD else board not in row.candidates):
            continue
        entry = {**row.as_json(), "gone": is_stale(row.heartbeat_at, now),
                 "silent_s": round(now - row.heartbeat_at, 1)}
        if row.state == ledger.HELD:
            entry["queue"] = [r.uid for r in rows if r.state == ledger.WAITING and row.board in r.candidates]
            shown.held.append(entry)
        else:
            own = Waiting(row.id, row.candidates)
            entry["ahead"] = {b: queue_ahead(waiting, own, b) for b in row.candidates}
            shown.waiting.append(entry)
    shown.health = [h.as_json() for h in ledger.health_rows(database, board) if h.failures or h.quarantined_at]
    shown.events = ledger.events(database, board, events)
    if inventory is not None:
        seen = {b for r in [*shown.held, *shown.waiting] for b in [r["board"], *r["candidates"]] if b} | {
            h["board"] for h in shown.health} | {e["board"] for e in shown.events}
        shown.hosts = {b: names for b, names in inventory_boards(inventory).items() if b in seen}
    return shown


def inventory_boards(inventory: Inventory) -> dict[str, list[str]]:
    """Each board the inventory's usable hosts reach -> the host names it has there."""
    machine = socket.gethostname()
    found: dict[str, list[str]] = {}
    for name in inventory.hosts:
        found.setdefault(board_key(inventory.host(name), machine), []).append(name)
    return found


def board_of(name: str, inventory: Inventory | None) -> str:
    """The board an inventory's host name is (as the leases name it), or ``name`` itself when it is already one."""
    if inventory is not None and name in inventory.names:
        return board_key(inventory.host(name), socket.gethostname())
    return name


def release(database: Database, board: str) -> ledger.Health | None:
    return ledger.release(database, board, holder_name())

