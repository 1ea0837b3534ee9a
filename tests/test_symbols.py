"""Names for the addresses nsys could not symbolise: a library of our own, built here with and without
symbols, profiled for real with its stripped copy, then analysed with the unstripped one (by file name)
and with a separate debug file (by build id). The load address orchestrate infers from the report is held
against the one the app itself reads from the loader."""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from browser import assert_clean, open_page
from conftest import profiled_run, run_cli, write_inventory

from orchestrator.symbols import SymbolFiles, read_build_id
from orchestrator.symbols.elf import read_functions
from orchestrator.symbols.load_base import PAGE, infer_base

APP = Path(__file__).parent / "apps" / "hotlib"
INTERNAL = ("mix_rows", "fold_columns")  # the static functions a stripped copy has no name for


def compile_hotlib(folder: Path) -> dict[str, Path]:
    """full/libhot.so (with .symtab and DWARF), lib/libhot.so (stripped), debug/.build-id/xx/rest.debug,
    and hotapp, linked against the stripped copy."""
    if not shutil.which("gcc"):
        pytest.skip("needs gcc (the README's test command installs it)")
    full, lib = folder / "full" / "libhot.so", folder / "lib" / "libhot.so"
    full.parent.mkdir(parents=True)
    lib.parent.mkdir()
    subprocess.run(["gcc", "-O2", "-g", "-fPIC", "-shared", "-Wl,--build-id", "-o", str(full), str(APP / "hot.c")],
                   check=True)
    shutil.copyfile(full, lib)
    subprocess.run(["strip", "--strip-all", str(lib)], check=True)
    build_id = read_build_id(full)
    assert build_id and build_id == read_build_id(lib)
    debug = folder / "debug" / ".build-id" / build_id[:2] / f"{build_id[2:]}.debug"
    debug.parent.mkdir(parents=True)
    subprocess.run(["objcopy", "--only-keep-debug", str(full), str(debug)], check=True)
    app = folder / "hotapp"
    subprocess.run(["gcc", "-O2", "-o", str(app), str(APP / "main.c"), f"-L{lib.parent}", "-lhot", "-ldl",
                    "-Wl,-rpath,$ORIGIN/lib"], check=True)
    return {"full": full, "lib": lib, "debug": debug, "app": app}


@pytest.fixture(scope="module")
def hotlib(tmp_path_factory) -> dict[str, Path]:
    return compile_hotlib(tmp_path_factory.mktemp("hotlib"))


def internal(names) -> dict[str, str]:
    """Our two static functions -> the names the compiler gave them (gcc may add .constprop.0)."""
    return {base: name for name in names for base in INTERNAL if name.split(".")[0] == base}


def test_the_stripped_copy_keeps_only_the_exported_function(hotlib):
    full, stripped = read_functions(hotlib["full"]), read_functions(hotlib["lib"])
    assert set(internal(full.names)) == set(INTERNAL)
    assert "hot_run" in stripped.names and not internal(stripped.names)
    assert set(internal(read_functions(hotlib["debug"]).names)) == set(INTERNAL)  # the debug file has them too


def test_the_load_address_is_the_one_every_named_frame_agrees_on(hotlib):
    table = read_functions(hotlib["full"])
    (start, size), = table.extents("hot_run")
    base = 0x7F12_3456_7000
    assert infer_base(table, [("hot_run", base + start + 5)]) == (base, 1)
    assert infer_base(table, [("hot_run", base + start + size)]) == (base, 1)  # a return address at the end
    mix = table.extents(internal(table.names)["mix_rows"])[0]
    assert infer_base(table, [("hot_run", base + start + 5), (table.names[table.starts.index(mix[0])],
                                                              base + mix[0] + 1)]) == (base, 2)
    assert infer_base(table, [("hot_run", base + start + 5), ("hot_run", base + PAGE + start + 5)])[0] is None
    assert infer_base(table, [("not_in_this_file", base)]) == (None, 0)


def test_symbol_folders_match_by_build_id_and_by_name_and_cache_the_tables(hotlib, tmp_path):
    cache = tmp_path / "cache"
    files = SymbolFiles([hotlib["full"].parent, hotlib["debug"].parents[2]], cache)
    build_id = read_build_id(hotlib["lib"])
    assert files.candidates("/board/lib/libhot.so", build_id)[0] in (hotlib["full"], hotlib["debug"])
    assert files.candidates("/board/lib/libhot.so", None) == [hotlib["full"]]
    assert files.candidates("/board/lib/libother.so", None) == []
    table = files.functions(hotlib["full"])
    assert table is not None and (cache / f"{build_id}.json").is_file()
    assert SymbolFiles([], cache).functions(hotlib["full"]) == table  # read back from the cache


@pytest.mark.integration
@pytest.mark.machine
@pytest.mark.alone  # CPU sampling: see test_profile_e2e
@pytest.mark.skipif(not shutil.which("nsys"), reason="needs nsys (the README's test command installs it)")
def test_a_stripped_library_profiled_for_real_gets_its_names_back(hotlib, tmp_path, browser):
    inventory = write_inventory(tmp_path / "inventory.yaml", {"here": {
        "ansible_connection": "local", "orchestrate_work_dir": str(tmp_path / "work"),
        "orchestrate_symbols": [str(hotlib["full"].parent)]}})
    done = run_cli("profile", "--target", "here", "--inventory", str(inventory), "--out", str(tmp_path / "runs"),
                   "--app-cmd", f"{hotlib['app']} 400", "--trace", "osrt", "--sample", "cpu", "--cpuctxsw", "none",
                   "--duration", "30", "--retries", "3")
    run_dir = profiled_run(done, tmp_path / "runs")
    loaded_at = json.loads((run_dir / "app.stdout.log").read_text().strip().splitlines()[-1])["load_address"]
    named = json.loads((run_dir / "summary.json").read_text())["hotspots"]  # the inventory's symbol folder
    bare = json.loads(run_cli("analyze", str(run_dir / "report.sqlite"), "--json").stdout)["hotspots"]
    by_id = json.loads(run_cli("analyze", str(run_dir / "report.sqlite"), "--json", "--symbols",
                               str(hotlib["debug"].parents[2])).stdout)["hotspots"]

    # without symbols: the library's addresses are one frame, and the exported caller keeps its name
    in_lib = next(row for row in bare["modules"] if row["module"] == "libhot.so")
    assert in_lib["pct"] > 90
    # a sample can stop in hot_run itself, between its calls: the library's samples are the two leaves' together
    self_samples = {row["symbol"]: row["samples"] for row in bare["self"]}
    assert bare["self"][0]["symbol"] == "[libhot.so]"
    assert self_samples["[libhot.so]"] + self_samples.get("hot_run", 0) == in_lib["samples"]
    assert "hot_run" in {row["symbol"] for row in bare["inclusive"]}
    # with them: the two internal functions, every sample of the library between them, mix_rows (3x the
    # iterations) the hotter; the load address is the loader's
    for hotspots, how in ((named, hotlib["full"]), (by_id, hotlib["debug"])):
        names = internal(row["symbol"] for row in hotspots["self"][:4])
        assert set(names) == set(INTERNAL), hotspots["self"][:4]
        counts = {base: next(r["samples"] for r in hotspots["self"] if r["symbol"] == name)
                  for base, name in names.items()}
        assert counts["mix_rows"] + counts["fold_columns"] >= in_lib["samples"] - 2
        assert counts["mix_rows"] > counts["fold_columns"]
        module = next(m for m in hotspots["symbols"] if m["module"].endswith("/lib/libhot.so"))
        assert (module["file"], module["load_address"], module["build_id"]) == \
            (str(how), loaded_at, read_build_id(hotlib["lib"]))
        assert module["named_frames"] >= 1 and module["unresolved"] == 0
        assert "[libhot.so]" not in {row["symbol"] for row in hotspots["inclusive"]}

    page = tmp_path / "named.html"
    run_cli("report", str(run_dir), "-o", str(page), "--symbols", str(hotlib["full"].parent))
    opened = open_page(browser, page)
    assert_clean(opened, page)
    flame = opened.page.locator("svg[data-chart=flame-graph]").text_content() or ""
    assert all(name in flame for name in internal(row["symbol"] for row in named["self"][:4]).values())
    assert "libhot.so" in (opened.page.locator("svg[data-chart=hotspots-modules]").text_content() or "")
    note = " ".join(opened.page.locator("[data-symbols-note]").all_inner_texts())
    assert f"loaded at {loaded_at}" in note
    assert_steps_run_as_printed(run_dir, hotlib, tmp_path, browser)


def assert_steps_run_as_printed(run_dir: Path, hotlib: dict[str, Path], tmp_path: Path, browser) -> None:
    """The next step `analyze` prints for the run, pasted into a shell in another folder with DIR filled in: it
    exits 0 and does what it says (the page names the functions)."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    steps = {step["rule"]: step["command"] for step in json.loads(
        run_cli("analyze", str(run_dir), "--json", cwd=elsewhere).stdout)["next_steps"]}
    assert "symbols" in steps, steps
    assert steps["symbols"].endswith(f"report {run_dir} --symbols DIR")  # the run folder by its full path

    def shell(command: str) -> subprocess.CompletedProcess:
        env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent), COLUMNS="120")
        return subprocess.run(command, shell=True, cwd=elsewhere, env=env, capture_output=True, text=True,
                              timeout=600)
    named = shell(steps["symbols"].replace("DIR", shlex.quote(str(hotlib["full"].parent))))
    assert named.returncode == 0, named.stderr
    page = Path(named.stdout.strip().splitlines()[-1])
    assert page == run_dir / "report.html"
    opened = open_page(browser, page)
    assert_clean(opened, page)
    flame = opened.page.locator("svg[data-chart=flame-graph]").text_content() or ""
    assert set(internal(re.findall(r"(?:mix_rows|fold_columns)[\w.]*", flame))) == set(INTERNAL)


