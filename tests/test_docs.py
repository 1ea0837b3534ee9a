"""The README and the documentation site (docs/, built by `mkdocs build --strict` in CI) say only what the CLI
does: every command and option they show exists in that command's parser, the exit codes are the CLI's own, and
the examples that run on any machine (no board, no run folder of the reader's) run here."""
from __future__ import annotations

import argparse
import gzip
import re
import shlex
from pathlib import Path

import pytest
from conftest import REPO, run_cli

from orchestrator.cli.help_commands import exit_codes_table
from orchestrator.cli.main import build_parser

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^(\s*)```sh([^\n]*)\n(.*?)^\1```", re.S | re.M)
INLINE = re.compile(r"`((?:\.venv/bin/)?orchestrate [^`]+)`")


def examples(page: Path) -> list[tuple[str, bool | None]]:
    """(command, whether its block says it needs a board; None in prose) for each orchestrate command shown."""
    text = page.read_text()
    found = []
    for match in FENCE.finditer(text):
        board = "needs a board" in match.group(2)
        for line in match.group(3).splitlines():
            line = line.strip()
            if line.startswith(("orchestrate ", ".venv/bin/orchestrate ")):
                found.append((line, board))
    found += [(command, None) for command in INLINE.findall(FENCE.sub("", text))]
    return found


def words(command: str) -> list[str]:
    command = command.split("orchestrate ", 1)[1]
    try:
        return shlex.split(command)
    except ValueError:  # a placeholder with a quote in it
        return command.split()


def command_parser(parser: argparse.ArgumentParser, said: list[str]) -> tuple[argparse.ArgumentParser, list[str]]:
    """The (sub)parser a command's words reach, and the words after its name."""
    while True:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs or not said or said[0] not in subs[0].choices:
            return parser, said
        parser, said = subs[0].choices[said[0]], said[1:]


def options_of(parser: argparse.ArgumentParser) -> set[str]:
    return {option for action in parser._actions for option in action.option_strings}


def test_the_readme_is_short_and_leads_to_the_pages():
    lines = (REPO / "README.md").read_text().splitlines()
    assert len(lines) <= 200
    linked = set(re.findall(r"\]\((docs/[\w-]+\.md)\)", "\n".join(lines)))
    assert linked == {f"docs/{page.name}" for page in PAGES[1:] if page.name != "index.md"}  # and none missing


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_command_and_option_the_docs_show_exists(page):
    parser = build_parser()
    top = {a for a in parser._actions if isinstance(a, argparse._SubParsersAction)}.pop().choices
    for command, _ in examples(page):
        said = words(command)
        if said[0] not in top and not said[0].startswith("-"):
            pytest.fail(f"{page.name}: '{command}': orchestrate has no command {said[0]}")
        sub, rest = command_parser(parser, said)
        unknown = [w.split("=")[0] for w in rest if w.startswith("--") and w.split("=")[0] not in options_of(sub)]
        assert not unknown, f"{page.name}: '{command}': {sub.prog} has no {', '.join(unknown)}"


def test_the_exit_codes_page_is_the_clis_table():
    page = (REPO / "docs" / "exit-codes.md").read_text()
    assert exit_codes_table() in page
    assert run_cli("help", "exit-codes").stdout.strip() == exit_codes_table()


# the reader's own files in the examples, and what stands in for them here: a stored es2gears export
READERS_FILES = {"runs/<run>/report.nsys-rep": "{report}", "runs/<run>/report.sqlite": "{report}",
                 "runs/<run>": "{report}", "capture.nsys-rep": "{report}", "report.nsys-rep": "{report}",
                 "runs/<cpu run>": "{report}", "runs/<gpu run>": "{other}"}


@pytest.mark.integration
def test_the_examples_that_need_no_board_run_here(tmp_path):
    """Each example shown in a block of its own that needs no board runs: on the reader's own reports (a stored
    export stands in for them), or as it is written."""
    report = tmp_path / "report.sqlite"
    report.write_bytes(gzip.decompress((REPO / "tests" / "data" / "nsys" / "es2gears-opengl.sqlite.gz").read_bytes()))
    other = tmp_path / "other.sqlite"
    other.write_bytes(report.read_bytes())
    ran = []
    for page in PAGES:
        for command, board in examples(page):
            shown = command.split("  #")[0]
            for theirs, ours in READERS_FILES.items():
                shown = shown.replace(theirs, ours.format(report=report, other=other))
            said = words(shown)
            if board is not False or said[0] in ("results", "mcp") or any("<" in w for w in said):
                continue  # results: the reader's database; mcp: a server its client ends; their own tests run them
            done = run_cli(*said, cwd=tmp_path)
            assert done.returncode == 0, f"{page.name}: '{command}': {done.stderr}"
            ran.append(command)
    assert len(ran) == 7, ran  # analyze twice, report twice, compare, trace twice


FENCED = re.compile(r"^(\s*)```.*?^\1```", re.S | re.M)
HEADING = re.compile(r"^#{1,6} \S", re.M)


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_long_page_has_a_heading_per_400_words_to_link_to(page):
    """A page over 800 words of prose (outside its code blocks) has at least a heading per 400 of them, so that
    each part of it can be linked to (mkdocs gives each heading an anchor) and found in the table of contents."""
    prose = FENCED.sub("", page.read_text())
    words, headings = len(prose.split()), len(HEADING.findall(prose))
    if words > 800:
        assert headings >= words / 400, f"{page.name}: {words} words under {headings} headings"


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()[:24]
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", path
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_the_screenshots_are_of_the_templates_as_they_are():
    """The pictures of the page in the README and the docs were made (scripts/screenshots.py) from the templates
    as they are now: a change of a template without new pictures fails here."""
    import json

    from orchestrator.report.render import templates_fingerprint
    manifest = json.loads((REPO / "docs/images/screenshots.json").read_text())
    assert manifest["templates"] == templates_fingerprint(), (
        "the page's templates changed since the screenshots were made: run python scripts/screenshots.py")
    shown = (REPO / "README.md").read_text() + (REPO / "docs/reports.md").read_text()
    for name in manifest["images"]:
        width, height = png_size(REPO / "docs/images" / name)
        assert width >= 1000 and height >= 300, name
        assert f"images/{name}" in shown, name
    assert "](docs/images/whole-run-timeline.png)" in (REPO / "README.md").read_text()
