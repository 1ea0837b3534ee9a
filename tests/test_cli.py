import pytest

from orchestrator.cli.main import build_parser, main
from orchestrator.errors import EXIT_CODES


def subcommands():
    parser = build_parser()
    action = next(a for a in parser._actions if a.dest == "command")
    return action.choices


def test_every_command_and_option_has_help():
    commands = list(subcommands().items())
    for name, sub in commands:
        assert sub.description, name
        for action in sub._actions:
            if action.dest != "help":
                assert action.help, f"{name} {action.option_strings}"
            if action.choices and hasattr(action, "add_parser"):  # `results import|list|history`
                commands += [(f"{name} {child}", parser) for child, parser in action.choices.items()]
    assert {"results import", "results list", "results history", "ci"} <= {name for name, _ in commands}


def test_usage_errors_are_one_line_and_exit_2(capsys):
    assert main(["profile", "--target", "local"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert err.startswith("error: orchestrate profile: one of the arguments --app --app-cmd is required")


def test_unknown_app_exits_3_with_one_line(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["profile", "--target", "local", "--app", "nope"]) == 3
    assert "error: no app 'nope' in the catalog" in capsys.readouterr().err


def test_exit_codes_are_distinct_and_documented():
    assert len(EXIT_CODES) == len(set(EXIT_CODES.values()))
    assert set(range(0, 26)) == set(EXIT_CODES)


@pytest.mark.parametrize("command", ["apps", "targets"])
def test_listing_commands(command, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main([command]) == 0
    out = capsys.readouterr().out
    assert ("es2gears" if command == "apps" else "local") in out


def test_readme_opens_with_the_two_commands_ci_runs():
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    readme = root / "README.md"
    blocks = readme.read_text().split("```sh\n")[1:3]
    commands = [block.split("\n```")[0].strip() for block in blocks]
    assert commands[0] == "./scripts/setup.sh && .venv/bin/orchestrate profile --target local --app es2gears"
    assert commands[1] in (root / ".ci/run").read_text()


@pytest.mark.integration
def test_targets_lists_a_broken_host_with_its_error_and_the_others(tmp_path, capsys):
    inventory = tmp_path / "inv.yaml"
    inventory.write_text("all:\n  hosts:\n    good: {ansible_host: 10.0.0.5}\n    bad: {ansible_port: many}\n")
    assert main(["targets", "--inventory", str(inventory)]) == 0
    out = capsys.readouterr().out
    assert "good" in out and "10.0.0.5" in out
    assert f"refused: bad: {inventory}: host 'bad': orchestrate cannot honour Ansible cannot render its values: " \
        in " ".join(out.split()) and "many" in out


def test_an_output_that_cannot_be_written_is_one_line(tmp_path, capsys):
    from orchestrator.database.connection import open_database
    database = str(tmp_path / "results.db")
    open_database(database).close()  # a writer makes it; `results history` only reads
    assert main(["results", "history", "--app", "x", "--metric", "m", "--db", database, "--html",
                 str(tmp_path / "missing" / "deeper" / "file" / "t.html")]) == 0  # folders are made
    (tmp_path / "file").write_text("")
    capsys.readouterr()
    assert main(["results", "history", "--app", "x", "--metric", "m", "--db", database, "--html",
                 str(tmp_path / "file" / "t.html")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith(f"error: cannot write {tmp_path / 'file' / 't.html'}: ")
    from orchestrator.cli.options import write_output
    from orchestrator.errors import UsageError
    with pytest.raises(UsageError) as caught:
        write_output(tmp_path / "file" / "junit.xml", "<testsuite/>")
    assert caught.value.one_line() == f"cannot write {tmp_path / 'file' / 'junit.xml'}: Not a directory (give a " \
                                      "path in a folder you can write)"
    assert write_output(tmp_path / "summary.md", "a", append=True).read_text() == "a"
    assert write_output(tmp_path / "summary.md", "b", append=True).read_text() == "ab"


def test_piped_progress_is_plain_lines_with_names_as_text():
    """Not a terminal: one line per phase as it ends, no bars redrawn, no escape codes, '[x]' kept as text."""
    from io import StringIO
    from types import SimpleNamespace

    from rich.console import Console

    from orchestrator.cli.console import FleetTable, StudyView
    out = StringIO()
    view = StudyView(Console(file=out, width=80), total_runs=2)
    view.begin_run(SimpleNamespace(index=0, label="threads=1"), 1, 1, 2, 95.0)
    view.start("capture", total=10)
    view.update("capture", 5)
    view.finish("capture", "10.0 s, ok; hottest [swrast_dri.so]")
    view.note("warning", "mostly in [swrast_dri.so]")
    view.end_run("ok")
    view.close()
    lines = out.getvalue().splitlines()
    assert lines[0] == "study: cell 1 of 1 (threads=1), run 1 of 2, about 2 min left"
    assert lines[1].startswith("capture: 10.0 s, ok; hottest [swrast_dri.so] (") and lines[1].endswith(" s)")
    assert lines[2] == "[warning] mostly in [swrast_dri.so]" and len(lines) == 3
    assert "\x1b" not in out.getvalue()
    out = StringIO()
    fleet = FleetTable(Console(file=out, width=40), ["nano-01-with-a-name-longer-than-forty-columns", "b"])
    fleet.board("b").start("capture", 10)
    fleet.ended(SimpleNamespace(target="nano-01-with-a-name-longer-than-forty-columns", status="ok", reason=None,
                                folder="runs/fleet/nano-01"))
    fleet.close()
    assert out.getvalue().splitlines() == ["nano-01-with-a-name-longer-than-forty-columns: ok: runs/fleet/nano-01"]


def test_the_last_frame_of_a_study_on_a_terminal_says_it_ended():
    from io import StringIO
    from types import SimpleNamespace

    from rich.console import Console

    from orchestrator.cli.console import StudyView
    out = StringIO()
    view = StudyView(Console(file=out, width=120, force_terminal=True), total_runs=2)
    for run in (1, 2):
        view.begin_run(SimpleNamespace(index=0, label=""), 1, run, 2, 5.0)
        view.end_run("ok")
    view.close()
    last = out.getvalue().rsplit("\x1b[2K", 1)[-1]  # the final frame, after rich's last line erase
    assert "2 of 2 runs ended" in last and "left" not in last


def test_a_table_piped_is_as_wide_as_its_longest_name(capsys, monkeypatch):
    from rich.table import Table

    from orchestrator.cli.options import show
    monkeypatch.delenv("COLUMNS", raising=False)
    table = Table("app", "command", expand=True)
    name = "es2gears_x11_with_a_long_name_" * 4
    table.add_row(name, "[bold]not markup[/]")
    show(table)
    out = capsys.readouterr().out
    assert name in out and "[bold]not markup[/]" in out and "…" not in out
    assert max(len(line) for line in out.splitlines()) < 200  # natural width, not stretched to the fallback


def test_an_inventory_file_is_kept_by_its_full_path_and_a_host_list_as_given(tmp_path, monkeypatch):
    """run.json records --inventory as parsed: a file given from where the user stood stays that file when a next
    step is pasted in another folder."""
    from orchestrator.cli.main import build_parser
    (tmp_path / "fleet.yaml").write_text("all:\n  hosts:\n    nano01: {}\n")
    (tmp_path / "more").mkdir()
    monkeypatch.chdir(tmp_path)
    parsed = build_parser().parse_args(["targets", "--inventory", "fleet.yaml", "--inventory", "more"])
    assert parsed.inventory == f"{tmp_path / 'fleet.yaml'},{tmp_path / 'more'}"
    assert build_parser().parse_args(["targets", "--inventory", "nano01,nano02,"]).inventory == "nano01,nano02,"


def test_the_inventory_a_run_records_is_the_one_read_by_its_full_path(tmp_path, monkeypatch):
    """Without --inventory a run reads $ORCHESTRATE_INVENTORY, else ./inventory.yaml: run.json records that one,
    by its full path, so its next steps name it from any folder; the embedded default records none."""
    from orchestrator.cli.main import build_parser
    from orchestrator.cli.options import recorded_inventory
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ORCHESTRATE_INVENTORY", raising=False)
    assert recorded_inventory(build_parser().parse_args(["targets"])) is None
    (tmp_path / "inventory.yaml").write_text("all:\n  hosts:\n    nano01: {}\n")
    assert recorded_inventory(build_parser().parse_args(["targets"])) == str(tmp_path / "inventory.yaml")
    (tmp_path / "lab.yaml").write_text("all:\n  hosts:\n    nano02: {}\n")
    monkeypatch.setenv("ORCHESTRATE_INVENTORY", "lab.yaml")
    assert recorded_inventory(build_parser().parse_args(["targets"])) == str(tmp_path / "lab.yaml")
    assert recorded_inventory(build_parser().parse_args(["targets", "--inventory", "a,b,"])) == "a,b,"
