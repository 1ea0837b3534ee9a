"""One error root for everything a user can cause or fix; each kind has its own exit code.

The CLI turns an ``OrchestratorError`` into one line on stderr and ``exit_code``; anything else is a
bug and gets a short notice plus a traceback in the debug log.
"""
from __future__ import annotations

from pathlib import Path


def bounded(text: str, limit: int = 80) -> str:
    """Outside text on its way into an error line: its white space folded to single spaces, at most limit
    characters (a hostile file's value is never a page of output)."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[:limit] + "..."


class OrchestratorError(Exception):
    """A failure the user can act on. ``hint`` says what to do about it; ``run_dir`` is the run folder
    the failure belongs to, once a run had one."""

    exit_code = 1
    run_dir: Path | None = None
    finding: str | None = None  # the code of the board's preflight finding it came from, when it did

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def one_line(self) -> str:
        """The message and its fix on one line: a line break or other control character a user's file put in
        (a YAML key '\n') is shown as its escape."""
        text = f"{self.message} ({self.hint})" if self.hint else self.message
        return text if text.isprintable() else "".join(c if c.isprintable() else c.encode("unicode_escape").decode()
                                                       for c in text)


class UsageError(OrchestratorError):
    exit_code = 2


class InventoryError(OrchestratorError):
    exit_code = 3


class AppSpecError(OrchestratorError):
    exit_code = 3


class StudySpecError(OrchestratorError):
    exit_code = 3


class ConnectError(OrchestratorError):
    """The host could not be reached (refused, timed out, name not resolved)."""

    exit_code = 4


class AuthError(OrchestratorError):
    exit_code = 5


class BecomeError(OrchestratorError):
    """The board answered, but sudo (ansible_become) cannot be used there as the inventory asks."""
    exit_code = 5


class HostKeyError(OrchestratorError):
    """The host's key is unknown or differs from known_hosts."""

    exit_code = 6


class PreflightError(OrchestratorError):
    exit_code = 7


class NsysMissingError(PreflightError):
    exit_code = 8


class AppNotFoundError(PreflightError):
    exit_code = 9


class AppFailedError(OrchestratorError):
    """The app exited non-zero on its own, before the capture was due to end."""

    exit_code = 10


class WatchdogError(OrchestratorError):
    """nsys or the app outlived the capture and had to be stopped."""

    exit_code = 11


class DiskFullError(OrchestratorError):
    exit_code = 12


class TransferError(OrchestratorError):
    """A pulled file did not arrive intact (checksum or size mismatch, SFTP failure)."""

    exit_code = 13


class RemoteCommandError(OrchestratorError):
    exit_code = 14


class AgentError(RemoteCommandError):
    """The remote agent could not run or answered with a failure."""

    exit_code = 14


class ReportError(OrchestratorError):
    """A report could not be imported or exported."""

    exit_code = 15


class InterruptedRunError(OrchestratorError):
    """Ctrl-C or SIGTERM during a run: what was captured is kept, here or on the board."""

    exit_code = 16


class ConnectionLostError(OrchestratorError):
    """The link to the board broke mid-run; the board keeps the capture for 'orchestrate fetch'."""

    exit_code = 17


class BoardBusyError(OrchestratorError):
    """Another run holds the board's lock."""

    exit_code = 18


class ParseError(OrchestratorError):
    """A tool's output file holds none of the figures its parser knows."""

    exit_code = 19


class StudyCellsFailedError(OrchestratorError):
    """A study ran to its end, but some of its cells failed (their reasons are in study.json)."""

    exit_code = 20


class FleetBoardsFailedError(OrchestratorError):
    """A fleet command reached its end, but some boards failed or could not be reached (the recap says why)."""

    exit_code = 21


class GateRegressionError(OrchestratorError):
    """A CI job measured a metric clearly worse than its baseline, beyond its practical threshold."""

    exit_code = 22


class CiRunFailedError(OrchestratorError):
    """A CI job's run failed, so the gate had nothing to judge for it (a regression is exit code 22)."""

    exit_code = 23


class ResultsDatabaseError(OrchestratorError):
    """The results database could not be opened, read or written."""

    exit_code = 24


class NothingStoredError(ResultsDatabaseError):
    """A reader found no results database, an empty one, or one whose schema is older than what it reads."""


class BoardQuarantinedError(OrchestratorError):
    """The board (every board a pattern could take) is quarantined: it failed its connection or preflight too
    many times in a row, until 'orchestrate boards release'."""

    exit_code = 25


EXIT_CODES: dict[int, str] = {
    0: "success",
    1: "unexpected internal error (see the debug log)",
    2: "bad command-line usage",
    3: "invalid inventory, app spec or study file",
    4: "host unreachable (refused, timed out, unknown name)",
    5: "SSH authentication refused, or sudo (ansible_become) cannot be used as asked",
    6: "host key unknown or changed",
    7: "preflight found a blocking problem on the target",
    8: "nsys not found or too old on the target",
    9: "the app's executable was not found on the target",
    10: "the app exited with a non-zero status",
    11: "the watchdog had to stop nsys or the app",
    12: "not enough disk space on the target or the host",
    13: "a pulled file failed verification or the transfer broke",
    14: "a remote command or the agent failed",
    15: "the report could not be imported or exported",
    16: "interrupted (Ctrl-C or SIGTERM); the report was kept, here or on the board for 'orchestrate fetch'",
    17: "the connection broke mid-run; the board keeps the report for 'orchestrate fetch'",
    18: "the board is busy with another run (see --wait-lock)",
    19: "the file holds no output of the named tool ('orchestrate parse')",
    20: "a study ran, but some of its cells failed (study.json says why)",
    21: "a fleet command ran, but some boards failed or were unreachable (the recap and fleet.json say why)",
    22: "the CI gate found a regression (the summary and the JUnit file name the metric and its figures)",
    23: "a CI job's run failed, so the gate could not judge it",
    24: "the results database could not be opened, read or written",
    25: "the board is quarantined after failing its connection or preflight in a row ('orchestrate boards')",
}
