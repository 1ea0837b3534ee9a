"""The clean-error contract, for every command family and its options: a mistake ends in one line on stderr
that says what to do, with an exit code from the README's table (never 1, "internal error"), and writes
nothing: no partial file, nothing beside the folder or database named.

The values are generated (hypothesis), so the contract is checked for the class of each mistake, not for a
list of them. No command here reaches a board: the one board of the inventory listens on no port (127.0.0.1:1), so a
command whose values are all valid gets as far as connecting, and ends in that one clean line (exit 4, or
the fleet's 21, the job's 23) instead of a capture; only then may it write, and only in its --out folder.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orchestrator.cli.main import main
from orchestrator.database.connection import open_database
from orchestrator.errors import EXIT_CODES, AppSpecError, HostKeyError, InventoryError, StudySpecError, UsageError
from orchestrator.inventory.catalog import load_catalog
from orchestrator.inventory.hosts import load_inventory
from orchestrator.study.spec import load_study
from orchestrator.targets.connect import open_transport
from orchestrator.targets.settings import ConnectOptions

NUMBERS = ["nan", "NaN", "inf", "-inf", "1e309", "-1e309", "1e9", "-5", "-1", "0", "-0", "1e-400", "0x10", "1_0",
           "", " ", "abc", "5s", "3.", ".", "٣", "10**9", "1e", "2" * 400]
TEXTS = st.text(alphabet=st.characters(blacklist_characters="\x00"), max_size=16)
# what a file can hold: UTF-8 has no lone surrogates (TEXTS has them, for the command line's arguments)
FILE_TEXTS = st.text(alphabet=st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=16)
VALUES = st.one_of(st.sampled_from(NUMBERS), TEXTS, st.sampled_from(["\udcff", "a\udcfeb", "x" * 300, "/proc/x/y",
                                                                      "[bold]x[/]", "[/oops]", "-x", "--", "~"]))
# 20 examples per run of the suite (every run draws new ones); ORCHESTRATE_FUZZ_EXAMPLES=2000 for a longer hunt
EXAMPLES = int(os.environ.get("ORCHESTRATE_FUZZ_EXAMPLES", "20"))
FAST = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

STUDY = {"study": "s", "command": ["true"], "matrix": {"threads": [1, 2]}, "target": "nowhere"}
INVENTORY = "all:\n  hosts:\n    board: {ansible_host: 127.0.0.1, ansible_port: 1}\n"


@pytest.fixture(scope="module")
def place(tmp_path_factory) -> Path:
    """A working folder with an inventory, a study file and an (empty) results database."""
    folder = tmp_path_factory.mktemp("clean")
    (folder / "inv.yaml").write_text(INVENTORY)
    (folder / "s.yaml").write_text(yaml.safe_dump(STUDY))
    open_database(str(folder / "results.db")).close()
    (folder / "listrun").mkdir()
    (folder / "listrun" / "run.json").write_text("[1, 2]\n")  # JSON, but not a run's
    return folder


def families(place: Path) -> dict[str, tuple[list[str], list[str]]]:
    """Each command family: the arguments that make it a valid command aimed nowhere, and its options."""
    inv, db = ["--inventory", str(place / "inv.yaml")], ["--db", str(place / "results.db")]
    runs = ["--duration", "--delay", "--grace", "--retries", "--wait-lock", "--nvpmodel", "--trace", "--sample",
            "--cpuctxsw", "--apps-dir", "--ssh-config", "--out", "--heartbeat-timeout"]
    return {
        "profile": (["profile", "--target", "board", "--app", "es2gears", *inv], runs),
        "study": (["study", str(place / "s.yaml"), "--target", "board", *inv],
                  ["--repeat", "--set", "--grace", "--retries", "--wait-lock", "--apps-dir", "--out"]),
        "fleet": (["fleet", "--app", "es2gears", "--limit", "board", *inv],
                  ["--forks", "--board-timeout", "--repeat", "--set", *runs]),
        "doctor": (["doctor", "--limit", "board", *inv], ["--forks", "--ssh-config", "--known-hosts"]),
        "ci": (["ci", "--app", "es2gears", "--target", "board", *inv, *db],
               ["--gate", "--repeat", "--baseline-runs", "--grace", "--retries", "--set", "--out", "--baseline",
                "--junit", "--summary"]),
        "analyze": (["analyze", str(place / "missing.sqlite")],
                    ["--window", "--frame", "--process", "--frame-range", "--symbols", "--nsys"]),
        "trace": (["trace", str(place / "missing.sqlite")], ["--max-events", "--frame", "--window", "-o"]),
        "report": (["report", str(place / "missing")], ["-o", "--symbols"]),
        "compare": (["compare", str(place / "a"), str(place / "b")], ["-o", "--label"]),
        "results list": (["results", "list", *db], ["--limit", "--since", "--app", "--target"]),
        "results history": (["results", "history", "--app", "a", "--metric", "m", "--judge", *db],
                             ["--last", "--threshold", "--base", "--board-kind"]),
        "results import": (["results", "import", str(place / "nothing"), *db], ["--commit", "--branch"]),
        "fetch": (["fetch", str(place / "no-run"), *inv], ["--ssh-config", "--known-hosts"]),
        "parse": (["parse", "glmark2", str(place / "no-output.log")], []),
        "targets": (["targets", "--inventory", str(place / "no-inventory.yaml")], ["--limit"]),
        "nsys deploy": (["nsys", "deploy", "--target", "board", "--from", str(place), *inv],
                        ["--from", "--target", "--ssh-config", "--known-hosts"]),
    }


def tree(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


READERS = {"results list", "results history"}  # valid values read the (empty) database: a success


def named_outputs(argv: list[str]) -> list[str]:
    """What a command that got as far as its board may write: its --out folder (runs/ by default), and the
    files --junit and --summary name."""
    named = [arg.split("=", 1)[1] for arg in argv if arg.startswith(("--out=", "--junit=", "--summary="))]
    return [os.path.normpath(n) for n in named] + ([] if any(a.startswith("--out=") for a in argv) else ["runs"])


def assert_clean(argv: list[str], place: Path, capsys: pytest.CaptureFixture[str],
                 may_succeed: bool = False) -> tuple[int, str]:
    before = tree(place)
    code = main(argv)
    err = capsys.readouterr().err
    reached = code in (4, 21, 23)  # it reached for the board: progress lines, a recap, then its one error
    lines = [line for line in err.strip().splitlines() if line.startswith("error:") or not reached]
    written = tree(place) - before
    if code == 0 and may_succeed:
        assert not err and not written, (argv, err)
        return code, ""
    assert code in EXIT_CODES and code not in (0, 1), (argv, code, err)
    assert len(lines) == 1 and lines[0].startswith("error: ") and len(lines[0]) < 2100, (argv, err)
    assert "internal error" not in err and "Traceback" not in err and ".part" not in "".join(written)
    if reached:  # it may have written its run folder and named files, nothing else
        outputs = named_outputs(argv)
        assert all(any(w == o or w.startswith(o.rstrip("/") + "/") or o == "." for o in outputs) for w in written), \
            (argv, written)
        for path in sorted((place / w for w in written), key=lambda p: len(p.parts), reverse=True):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            elif path.exists() or path.is_symlink():
                path.unlink()
    else:
        assert not written, (argv, written)  # nothing written, nothing partial
    return code, lines[0]


@FAST
@given(family=st.sampled_from(sorted(families(Path("/")))), data=st.data())
def test_every_option_of_every_command_takes_any_value_cleanly(place, capsys, monkeypatch, family, data):
    monkeypatch.chdir(place)
    base, options = families(place)[family]
    argv = list(base)
    for option in data.draw(st.lists(st.sampled_from(options), max_size=3, unique=True)) if options else []:
        argv.append(f"{option}={data.draw(VALUES)}")
    assert_clean(argv, place, capsys, may_succeed=family in READERS)


@settings(FAST, max_examples=max(EXAMPLES // 3, 1))  # each example tries every family
@given(words=st.lists(VALUES, max_size=4))
def test_any_words_after_any_command_are_a_clean_line(place, capsys, monkeypatch, words):
    monkeypatch.chdir(place)
    for family, (base, _) in families(place).items():
        assert_clean([*base, *words], place, capsys, may_succeed=family in READERS and not words)


@pytest.mark.parametrize("argv, code, says", [
    (["profile", "--target", "local", "--app", "es2gears", "--duration", "nan"], 2, "not a number of seconds"),
    (["profile", "--target", "local", "--app", "es2gears", "--duration", "1e9"], 2, "from 0.1 to 86400"),
    (["profile", "--target", "local", "--app", "es2gears", "--grace", "-5"], 2, "argument --grace"),
    (["profile", "--target", "local", "--app", "es2gears", "--retries", "1000"], 2, "from 0 to 10"),
    (["profile", "--target", "local", "--app-cmd", '"unterminated'], 2, "--app-cmd cannot be split into words"),
    (["profile", "--target", "local", "--app", "es2gears", "--apps-dir", "nope"], 2, "nope: no such folder"),
    (["profile", "--target", "local", "--app", "es2gears", "--ssh-config", "nope"], 2, "nope: no such file"),
    (["profile", "--target", "board", "--app", "es2gears", "--out", "/proc/no/such", "--inventory", "inv.yaml"], 2,
     "cannot make a run folder in /proc/no/such"),
    (["profile", "--target", "local", "--app", "es2gears", "--label", "x"], 2, "unrecognized arguments: --label"),
    (["compare", "a", "b", "--label", "b\udcffad"], 2, "not UTF-8 text"),
    (["study", "s.yaml", "--set", "threads="], 2, "--set threads=: give distinct plain values"),
    (["study", "s.yaml", "--set", "threads=[1"], 2, "--set threads=[1: give distinct plain values"),
    (["fleet", "--app-cmd", "ls", "--repeat", "2"], 2, "--repeat goes with --study"),
    (["fleet", "--app-cmd", "ls", "--set", "a=1"], 2, "--set goes with --study"),
    (["fleet", "--study", "s.yaml", "--duration", "3"], 2, "--duration goes with --app or --app-cmd"),
    (["profile", "--target", "local", "--app", "es2gears", "--no-nsys", "--sample", "none"], 2,
     "--sample sets what nsys records, and --no-nsys runs the app without nsys (leave --sample out, or --no-nsys)"),
    (["fleet", "--app", "es2gears", "--no-nsys", "--gpu-metrics", "ga10b"], 2,
     "--gpu-metrics sets what nsys records"),
    (["results", "list", "--limit", "0"], 2, "from 1 to"),
    (["results", "history", "--app", "a", "--metric", "m", "--last", "0"], 2, "from 1 to"),
    (["results", "history", "--app", "a", "--metric", "m", "--threshold", "abc", "--judge", "--db", "results.db"], 2,
     "--threshold 'abc': the threshold must be"),
    (["ci", "--app", "es2gears", "--target", "local", "--gate", "nosuchmetric:5%"], 2,
     "--gate nosuchmetric: no such metric"),
    (["ci", "--app", "es2gears", "--target", "local", "--min-jobs", "8", "--baseline-jobs", "6"], 2,
     "--min-jobs 8 is more than the 6 jobs a baseline holds: no job would ever be judged"),
    (["ci", "--app", "es2gears", "--target", "local", "--repeat", "3", "--max-repeat", "2"], 2,
     "--max-repeat 2 is below the 3 runs a cell has anyway"),
    (["parse", "nosuch", "f"], 2, "no parser named 'nosuch' (known: trtexec, tftrt-bench, glmark2, jetson-inference, "
                                  "benchmark_model, tegrastats, nvpmodel"),
    (["analyze", "x" * 300 + ".sqlite"], 2, "File name too long"),
    (["results", "list", "--db", "postgresql+asyncpg://u@localhost/db"], 24, "the driver 'asyncpg' is not one"),
    (["results", "list", "--db", "results.db", "--since", "99999999d"], 2, "longer ago than dates go"),
    (["results", "history", "--app", "a", "--metric", "m", "--db", "results.db", "--html", "."], 2,
     "cannot write .: it is a folder"),
    (["results", "history", "--app", "a", "--metric", "m", "--db", "results.db", "--html", "/proc/x/t.html"], 2,
     "cannot write /proc/x/t.html"),
    (["results", "import", "nothing-here", "--db", "new.db"], 2, "nothing-here is not a folder"),
    (["fetch", "listrun"], 2, "listrun is not a run folder"),
    (["report", "listrun"], 15, "listrun/run.json could not be read (it holds list, not an object)"),
    (["analyze", "listrun"], 15, "listrun is a folder that holds no report"),
    (["study", ".", "--target", "board"], 3, ". is a folder, not a study file"),
])
def test_the_mistakes_users_made_are_clean_lines(place, capsys, monkeypatch, argv, code, says):
    monkeypatch.chdir(place)
    found, line = assert_clean(argv, place, capsys)
    assert found == code and says in line, line


@pytest.mark.parametrize("argv, code, says", [
    (["profile", "--target", "local", "--app-cmd", '"unterminated'], 2,
     "error: --app-cmd cannot be split into words (no closing quotation): '\"unterminated'"),
    (["compare", "a", "b", "--label", "b\udcffad"], 2,
     "error: an argument holds bytes that are not UTF-8 text: 'b\\\\udcffad'"),
    (["analyze", "[swrast_dri.so].sqlite"], 15, "error: [swrast_dri.so].sqlite: no such file"),
    (["analyze", "[bold]x[/].sqlite"], 15, "error: [bold]x[/].sqlite: no such file"),
])
def test_the_line_says_it_as_it_is(place, capsys, monkeypatch, argv, code, says):
    """Names and values reach the terminal as text: '[swrast_dri.so]' is not markup to drop."""
    monkeypatch.chdir(place)
    found, line = assert_clean(argv, place, capsys)
    assert found == code and line.startswith(says), line


def test_a_read_command_never_creates_or_changes_a_database(place, capsys, monkeypatch):
    import json
    import sqlite3
    monkeypatch.chdir(place)
    run = place / "okrun"  # a run that reached its board, to import
    run.mkdir(exist_ok=True)
    (run / "run.json").write_text(json.dumps({"run_id": "okrun", "started_at": "2026-11-01T09:00:00+00:00",
                                              "status": "ok", "facts": {"system": {"arch": "x86_64"}}}))
    other = place / "report-like.sqlite"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)")
    before = other.read_bytes()
    for argv, says in [(["results", "list", "--db", str(other)], "is an SQLite file of something else"),
                       (["results", "history", "--app", "a", "--metric", "m", "--db", str(other)], "something else"),
                       (["results", "import", str(run), "--db", str(other)], "something else"),
                       (["results", "list", "--db", str(place / "typo.db")], "no results database at"),
                       (["results", "list", "--db", str(place)], "is a folder")]:
        code, line = assert_clean(argv, place, capsys)
        assert code == 24 and says in line, line
    assert other.read_bytes() == before and not (place / "typo.db").exists()
    assert not list(place.glob("*-wal")) and not list(place.glob("*-shm"))
    assert main(["results", "list", "--db", str(place / "results.db")]) == 0  # a results database reads well


def test_a_corrupt_known_hosts_line_is_named_with_its_number(tmp_path):
    known = tmp_path / "known_hosts"
    known.write_text("# mine\n[127.0.0.1]:1 ssh-ed25519 AAAA!!not-base64\n")
    (tmp_path / "inv.yaml").write_text(INVENTORY)
    host = load_inventory(str(tmp_path / "inv.yaml")).host("board")
    with pytest.raises(HostKeyError) as caught:
        open_transport(host, ConnectOptions(known_hosts=known))
    assert caught.value.one_line() == f"{known}: line 2 holds no readable host key ('[127.0.0.1]:1 ssh-ed25519 " \
                                      f"AAAA!!not-base64') (fix or delete line 2 of {known})"


def test_a_failed_write_leaves_no_partial_file(tmp_path, export):
    """-o naming a folder: said in one line, and neither a page nor a .part file is left."""
    run = tmp_path / "run"
    run.mkdir()
    report = export("es2gears-opengl")
    folder = tmp_path / "taken"
    folder.mkdir()
    for argv in (["report", str(report), "-o", str(folder)],
                 ["trace", str(report), "-o", str(folder), "--max-events", "100"]):
        assert main(argv) == 2
    assert [p.name for p in folder.iterdir()] == [] and not [p for p in tmp_path.rglob("*.part")]
    assert not [p for p in report.parent.glob(".*part*")]


# -- YAML inputs: inventory, study, app spec ------------------------------------------------------------------------

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.floats(allow_nan=True), TEXTS)
DOCUMENTS = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                         st.dictionaries(TEXTS, inner, max_size=4)), max_leaves=20)
KEYS = ["study", "command", "matrix", "exclude", "repeat", "target", "app", "args", "env", "duration_s", "name",
        "delay_s", "trace", "sample", "parser", "files", "workdir", "needs_display", "threads", "all", "hosts",
        "vars", "children", "ansible_host", "ansible_port"]
SHAPED = st.dictionaries(st.sampled_from(KEYS), DOCUMENTS, max_size=6)


def _yaml_text(draw_doc: object, duplicate: str | None) -> str:
    text = yaml.safe_dump(draw_doc, allow_unicode=True) if draw_doc is not None else ""
    if duplicate:  # the same key again at the top: PyYAML alone would keep the last value silently
        text += f"{duplicate}: again\n" if isinstance(draw_doc, dict) and duplicate in draw_doc else ""
    return text


@settings(max_examples=60, deadline=None)
@given(document=st.one_of(SHAPED, DOCUMENTS), duplicate=st.one_of(st.none(), st.sampled_from(KEYS)),
       raw=st.one_of(st.none(), FILE_TEXTS))
def test_any_yaml_loads_or_is_one_clean_line(tmp_path_factory, document, duplicate, raw):
    folder = tmp_path_factory.mktemp("yaml")
    text = raw if raw is not None else _yaml_text(document, duplicate)
    twice = duplicate is not None and raw is None and isinstance(document, dict) and duplicate in document
    # (an inventory is read by Ansible's own code: test_inventory.py holds it to Ansible's reading)
    for name, load, error in (("study.yaml", lambda p: load_study(p), StudySpecError),
                              ("apps/app.yaml", lambda p: load_catalog(p.parent), AppSpecError)):
        path = folder / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        try:
            load(path)
        except (StudySpecError, AppSpecError, InventoryError, UsageError) as exc:
            assert isinstance(exc, error), (name, exc)
            assert "\n" not in exc.one_line() and str(path) in exc.message
        else:
            assert not twice, f"{name}: a key given twice was taken silently"
        if twice:
            with pytest.raises(error):
                load(path)


@pytest.mark.integration
def test_a_key_given_twice_is_read_as_ansible_reads_it_and_said(tmp_path):
    """Ansible keeps the last of a key given twice and warns: orchestrate reads the same, and says so."""
    inventory = tmp_path / "inv.yaml"
    inventory.write_text("all:\n  hosts:\n    nano:\n      ansible_host: 10.0.0.5\n      ansible_user: me\n"
                         "      ansible_host: 10.0.0.6\n")
    read = load_inventory(str(inventory))
    assert read.host("nano").address == "10.0.0.6"
    assert any("duplicate" in warning and "ansible_host" in warning for warning in read.warnings)
    merged = tmp_path / "merged.yaml"  # a key a '<<' merge brings may be overridden, as YAML says
    merged.write_text("base: &b {ansible_port: 22}\nall:\n  hosts:\n    nano: {<<: *b, ansible_port: 2222}\n")
    assert load_inventory(str(merged)).host("nano").port == 2222
    assert os.environ.get("ORCHESTRATE_INVENTORY") is None
