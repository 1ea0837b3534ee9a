"""How often the verdict names an app's real cause: small apps with a known cause each, profiled for real.

Each app is a folder holding an orchestrate app spec (``app.yaml``, its ``files`` beside it, built first by the
folder's Makefile when it has one) and what its verdict must say (``expected.yaml``):

    kind: thread_wait                    # a clear app: the verdict's kind must be its cause
    confidence: low                      # an ambiguous app: the verdict must say it is unsure
    kinds: [cpu_bound, sleep]            #   (and, if it names a kind, one of these)
    why: ...                             # the cause, in words

bench/verdict_apps/ holds the repository's (C and Python; GL frames ended by swaps or by glFinish, NVTX frames);
apps written elsewhere in the same format are run the same way (``python bench/verdicts.py DIR ...``: each DIR an
app folder, or a folder of them). Every app is profiled on this machine (``orchestrate profile --target local``)
with its own spec, and its run's summary.json read. Each app is then:

- right: a clear app whose kind is its cause, at medium or high confidence; an ambiguous app at low confidence;
- low-confidence: a clear app whose verdict says it is unsure (low confidence), whatever its kind;
- wrong: a clear app given another kind at medium or high confidence; an ambiguous app said with confidence.

It prints a line per app (expected, verdict, confidence, the largest shares) and the totals; it exits 0 when every
app is right.

    python bench/verdicts.py [DIR ...] [--only NAME ...] [--out FOLDER] [--retries N]
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
NOT_CAPTURED = "not captured"  # nsys stalled around its report on every try, and no report came back
NSYS_STALLED = "error: watchdog: nsys stalled"
APPS = REPO / "bench" / "verdict_apps"
ORCHESTRATE = [sys.executable, "-m", "orchestrator"]
EXPECTED_KEYS = {"kind", "confidence", "kinds", "why"}


@dataclass(frozen=True)
class App:
    name: str
    folder: Path
    spec: dict
    kind: str | None              # a clear app's cause
    kinds: tuple[str, ...]        # an ambiguous app's candidates
    why: str

    @property
    def ambiguous(self) -> bool:
        return self.kind is None


def read_app(folder: Path) -> App:
    spec = yaml.safe_load((folder / "app.yaml").read_text())
    expected = yaml.safe_load((folder / "expected.yaml").read_text()) or {}
    unknown = sorted(set(expected) - EXPECTED_KEYS)
    if not isinstance(spec, dict) or "name" not in spec:
        raise SystemExit(f"error: {folder / 'app.yaml'} is no app spec (a mapping with a name): fix it")
    if unknown or ("kind" in expected) == (expected.get("confidence") == "low"):
        raise SystemExit(f"error: {folder / 'expected.yaml'} must say either 'kind: KIND' or 'confidence: low' "
                         f"(with 'kinds: [...]'){'; unknown: ' + ', '.join(unknown) if unknown else ''}")
    return App(str(spec["name"]), folder, spec, expected.get("kind"), tuple(expected.get("kinds") or ()),
               " ".join(str(expected.get("why", "")).split()))


def find_apps(places: list[Path]) -> list[App]:
    folders = []
    for place in places:
        if (place / "app.yaml").is_file():
            folders.append(place)
        else:
            folders += sorted(p.parent for p in place.glob("*/app.yaml"))
    if not folders:
        raise SystemExit(f"error: no app folder (app.yaml and expected.yaml) in {', '.join(map(str, places))}")
    return [read_app(folder) for folder in folders]


def staged_spec(app: App, specs: Path) -> None:
    """The app's spec in a folder of specs, its files named by their full paths (they stay beside app.yaml)."""
    spec = dict(app.spec)
    if spec.get("files"):
        spec["files"] = [str((app.folder / name).resolve()) for name in spec["files"]]
    (specs / f"{app.name}.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))


def profile(app: App, specs: Path, out: Path, retries: int) -> tuple[dict | None, str]:
    """The run's summary.json, or None and why not."""
    if (app.folder / "Makefile").is_file():
        built = subprocess.run(["make", "-s", "-C", str(app.folder)], capture_output=True, text=True)
        if built.returncode != 0:
            return None, f"make failed: {built.stderr.strip().splitlines()[-1:]}"
    done = subprocess.run([*ORCHESTRATE, "profile", "--target", "local", "--app", app.name, "--apps-dir", str(specs),
                           "--out", str(out), "--retries", str(retries)], capture_output=True, text=True, cwd=REPO)
    lines = done.stdout.strip().splitlines()
    run_dir = Path(lines[-1]) if lines and done.returncode == 0 else stalled_run(done.returncode, out)
    if run_dir is None or not (run_dir / "summary.json").is_file():
        errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
        return None, (errors or [f"exit {done.returncode}"])[-1]
    return json.loads((run_dir / "summary.json").read_text()), str(run_dir)


def stalled_run(returncode: int, out: Path) -> Path | None:
    """The run folder of a capture whose nsys stalled around its report and was stopped (exit 11) while its report
    still came back whole, as a study counts it (figures.measured); None for any other failure."""
    from orchestrator.documents.run import read_run_or_none
    from orchestrator.figures.measured import measured_despite_nsys
    if returncode != 11 or not out.is_dir():
        return None
    runs = [p for p in out.iterdir() if (p / "run.json").is_file()]
    newest = max(runs, key=lambda p: p.stat().st_mtime) if runs else None
    document = read_run_or_none(newest) if newest is not None else None
    return newest if document is not None and measured_despite_nsys(document) else None


def judged(app: App, summary: dict | None) -> str:
    if summary is None or not summary.get("verdict"):
        return "wrong"
    kind, confidence = summary["verdict"]["kind"], summary["verdict"]["confidence"]
    if app.ambiguous:
        return "right" if confidence == "low" and (not app.kinds or kind in app.kinds) else "wrong"
    if confidence == "low":
        return "low-confidence"
    return "right" if kind == app.kind else "wrong"


def shares_of(summary: dict | None) -> str:
    found = (summary or {}).get("attribution") or {}
    shares = sorted(((s.get("pct", 0.0), name) for name, s in (found.get("shares") or {}).items()), reverse=True)
    return ", ".join(f"{name} {pct:.0f} %" for pct, name in shares[:3] if pct >= 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("places", nargs="*", type=Path, default=[APPS], help="app folders, or folders of them")
    parser.add_argument("--only", nargs="+", default=None, help="run only these apps (by name)")
    parser.add_argument("--out", type=Path, default=None, help="keep the run folders here (default: a temporary one)")
    parser.add_argument("--retries", type=int, default=2, help="captures to try again when nsys stalls")
    args = parser.parse_args()
    apps = [app for app in find_apps(args.places) if args.only is None or app.name in args.only]
    counts = {"right": 0, "low-confidence": 0, "wrong": 0, NOT_CAPTURED: 0}
    with tempfile.TemporaryDirectory(prefix="orchestrate-verdicts-") as work:
        specs, out = Path(work) / "specs", args.out or Path(work) / "runs"
        specs.mkdir()
        out.mkdir(parents=True, exist_ok=True)
        for app in apps:
            staged_spec(app, specs)
        print(f"{'app':24} {'expected':28} {'verdict':32} result          shares")
        for app in apps:
            summary, where = profile(app, specs, out, args.retries)
            result = NOT_CAPTURED if summary is None and where.startswith(NSYS_STALLED) else judged(app, summary)
            counts[result] += 1
            expected = f"low ({'/'.join(app.kinds)})" if app.ambiguous else app.kind
            verdict = summary["verdict"] if summary and summary.get("verdict") else None
            said = f"{verdict['kind']} ({verdict['confidence']})" if verdict else f"no verdict: {where}"
            print(f"{app.name:24} {expected:28} {said:32} {result:15} {shares_of(summary)}", flush=True)
        if args.out is None:
            shutil.rmtree(out, ignore_errors=True)
    total = sum(counts.values())
    stalled = f", {counts[NOT_CAPTURED]} not captured (nsys stalled on every try)" if counts[NOT_CAPTURED] else ""
    print(f"total: {counts['right']} right, {counts['low-confidence']} low-confidence, {counts['wrong']} wrong "
          f"of {total} apps{stalled}")
    return 0 if counts["right"] == total else 1


if __name__ == "__main__":
    sys.exit(main())
