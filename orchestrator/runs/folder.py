"""The local run folder: its id and its making (its run.json is ``documents.run``'s)."""
from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path

from ..errors import UsageError


def run_id(target: str, app: str, now: datetime | None = None) -> str:
    """'20261129T231500Z-nano01-gl2posenet': sorts by time, names what ran where."""
    stamp = (now or datetime.now(timezone.utc)).strftime("%Y%m%dT%H%M%SZ")
    safe = [safe_name_part(part) for part in (target, app)]
    return "-".join([stamp, *safe])


def safe_name_part(text: str, limit: int = 60) -> str:
    """Letters, digits, '.', '_' and '-' only, no '..', at most limit characters: always one plain file name."""
    cleaned = re.sub(r"\.{2,}", ".", re.sub(r"[^A-Za-z0-9._-]+", "_", text)).strip("._-")
    return cleaned[:limit].rstrip("._-") or "x"


def create_run_dir(out_dir: Path, identifier: str) -> Path:
    """Make a new, empty run folder; a second run in the same second gets a numeric suffix."""
    candidate, n = out_dir / identifier, 1
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        while True:
            try:
                candidate.mkdir()
                return candidate
            except FileExistsError:
                n += 1
                candidate = out_dir / f"{identifier}-{n}"
    except OSError as exc:
        raise UsageError(f"cannot make a run folder in {out_dir}: {exc.strerror or exc}",
                         "give --out a folder you can write") from None
