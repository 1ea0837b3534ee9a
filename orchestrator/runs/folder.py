"""The local run folder: its id, its layout and its run.json."""
from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..files import write_text


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


def write_run_json(run_dir: Path, record: dict[str, Any], name: str = "run.json") -> Path:
    """Written whole or not at all (a crash leaves the previous version)."""
    return write_text(run_dir / name, json.dumps(record, indent=2, sort_keys=True, default=str) + "\n")


def read_run_json(run_dir: Path) -> dict[str, Any]:
    """run.json's document; OSError when it cannot be read, ValueError when it is not a JSON object."""
    value = json.loads((run_dir / "run.json").read_text())
    if not isinstance(value, dict):
        raise ValueError(f"{run_dir / 'run.json'} holds {type(value).__name__}, not an object")
    return value


def read_json_object(path: Path) -> dict[str, Any]:
    """A JSON file holding an object, or {} when it is missing, unreadable or something else."""
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}
