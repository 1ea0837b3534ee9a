from orchestrator.cli import run

raise SystemExit(run())
