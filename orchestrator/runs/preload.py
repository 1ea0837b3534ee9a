"""What a run needs only once its capture ended, made ready while the board captures: the modules of the
analysis and the page (pandas and the charts among them) with the page's templates compiled, about 0.4 s here and
several times that on a small host, and the pull's own SSH connection. Neither before the connection nor after
the pull, where the user waits for them. It begins once the app has run for a moment, not while nsys starts (on a
board that is this machine, nsys's start and the loading would share its cores), and not at all during a capture
on this machine (the local target): there it would take CPU from the app being measured, so it comes after."""
from __future__ import annotations

import importlib
import threading

from remote_agent.messages import CaptureProgress

from ..targets.transport import Transport

LATER = (".collect", "..report")
APP_RUNNING_S = 0.5  # the app's seconds (its heartbeat's app_s) before the loading begins


# one loading at a time (a fleet's runs each have a Preparation): a run's thread finds the modules loaded, or
# waits for them, and two threads never import the same modules at once
_LOADING = threading.Lock()


def _load() -> None:
    with _LOADING:
        try:
            for name in LATER:
                importlib.import_module(name, __package__)
            from ..report.render import compile_templates
            compile_templates()
        except Exception:  # noqa: BLE001 (the run's own use of it, on the main thread, raises it where it is used)
            return


def load_now() -> None:
    """Load it all at once: for a process that forks one worker per run (an Ansible play's), so that every worker
    finds it loaded instead of loading it again."""
    _load()


class Preparation:
    """Begins on the capture's progress (``on_progress``), at the latest in ``finish``, which waits for the
    loading: the run imports LATER on its own thread after ``finish`` (a capture that failed before it leaves
    the loading thread to end on its own: Python's import locks keep the two apart)."""

    def __init__(self, transport: Transport, during_capture: bool, large_pull: bool = True) -> None:
        """large_pull: the run pulls a report (megabytes: through a connection of its own, begun now); without
        nsys its logs come through the connection that is there."""
        self.transport, self.during_capture, self.large_pull = transport, during_capture, large_pull
        self.thread: threading.Thread | None = None

    def on_progress(self, event: CaptureProgress) -> None:
        if self.during_capture and (event.app_s or 0) >= APP_RUNNING_S:
            self.begin()

    def begin(self) -> None:
        if self.thread is None:
            try:
                if self.large_pull:
                    self.transport.prepare_download()  # its process started before the loading thread
            except OSError:  # no process to spare now: the pull opens its connection itself
                pass
            self.thread = threading.Thread(target=_load, name="orchestrate-preload", daemon=True)
            self.thread.start()

    def finish(self) -> None:
        self.begin()
        assert self.thread is not None
        self.thread.join()
