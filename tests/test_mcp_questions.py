"""The questions a Jetson developer asks of a run, each with the MCP tool calls that answer it and the truth computed
apart from the server: SQL over the export, SQL over the results database, or the run folder's own document. Every
file in tests/data/questions/ is run the same way, whoever wrote it (README.md there says the format).

A check names a figure of an answer as CALL:PATH: CALL the call's index, PATH dotted keys and list indexes, a list
item picked by its fields as {key=value,key=value}, a key that holds dots as {key}, and '#' for a list's
length."""
from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import yaml
from mcp_root import EXPORTS, ask, make_results_db, make_root

pytestmark = pytest.mark.integration

QUESTIONS = Path(__file__).parent / "data" / "questions"
FILES = sorted(QUESTIONS.glob("*.yaml"))
SEGMENT = re.compile(r"([^.{]+)?((?:\{[^}]*\})?)(?:\.|$)")


@pytest.fixture(scope="module")
def served(tmp_path_factory, export) -> tuple[Path, Path]:
    root = make_root(tmp_path_factory.mktemp("questions-root"), export)
    return root, make_results_db(root, tmp_path_factory.mktemp("questions-db") / "results.db")


def figure(answer: Any, path: str) -> Any:
    """The value PATH names in an answer (the module's docstring says how)."""
    value = answer
    for match in SEGMENT.finditer(path):
        key, picked = match.group(1), match.group(2)
        if not key and not picked:
            continue
        if key == "#":
            value = len(value)
            continue
        if key is not None:
            value = value[int(key)] if isinstance(value, list) else value[key]
        if picked and "=" not in picked:  # a key holding dots: metrics{app.inference_mean_ms}
            value = value[picked[1:-1]]
        elif picked:
            wanted = dict(part.split("=", 1) for part in picked[1:-1].split(","))
            value = next(item for item in value if all(str(item.get(k)) == v for k, v in wanted.items()))
    return value


def truth(check: dict[str, Any], root: Path, db: Path) -> Any:
    if "sql" in check:
        with sqlite3.connect(root / EXPORTS[check["export"]]) as conn:
            return conn.execute(check["sql"]).fetchone()[0]
    if "db_sql" in check:
        with sqlite3.connect(db) as conn:
            return conn.execute(check["db_sql"]).fetchone()[0]
    file, field = check["document"].split(":", 1)
    return figure(json.loads((root / file).read_text()), field)


def questions() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for file in FILES:
        for item in yaml.safe_load(file.read_text()):
            found.append((f"{file.stem}-{item['id']}", item))
    return found


def test_the_question_set_is_large_and_every_check_computes_its_truth():
    asked = questions()
    assert len([q for q in asked if q[0].startswith("jetson-developer-")]) >= 40
    for name, item in asked:
        assert item["question"].endswith("?") and item["calls"] and item["checks"], name
        for check in item["checks"]:
            assert sum(key in check for key in ("sql", "db_sql", "document")) == 1, name


@pytest.mark.parametrize("file", FILES, ids=[f.stem for f in FILES])
def test_each_question_is_answered_with_the_truths_figures(served, file):
    root, db = served
    items = yaml.safe_load(file.read_text())
    calls = [(tool, args) for item in items for tool, args in item["calls"]]
    answers = iter(ask(root, calls, db))
    wrong = []
    for item in items:
        mine = [next(answers) for _ in item["calls"]]
        for failed, text in mine:
            assert not failed, f"{item['id']}: {text}"
        for check in item["checks"]:
            index, path = check["answer"].split(":", 1)
            want = truth(check, root, db)
            assert want is not None, f"{item['id']}: {check['answer']}'s truth found nothing"
            try:
                got = figure(mine[int(index)][1], path)
            except (KeyError, IndexError, StopIteration, TypeError) as exc:
                wrong.append(f"{item['id']} {item['question']} {check['answer']}: not in the answer ({exc!r})")
                continue
            same = got == pytest.approx(want, rel=check.get("approx", 1e-9)) \
                if isinstance(want, float) or isinstance(got, float) else got == want
            if not same:
                wrong.append(f"{item['id']} {item['question']} {check['answer']}: {got!r} != {want!r}")
    assert not wrong, "\n".join(wrong)
