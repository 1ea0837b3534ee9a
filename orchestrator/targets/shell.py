"""A command is a value: argv, environment and working directory, quoted only when rendered."""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

# Environment names whose values are never written anywhere but to the app's own environment.
SECRET_NAME = re.compile(r"TOKEN|KEY|PASSWORD|PASSWD|SECRET|CREDENTIAL", re.IGNORECASE)
MASK = "***"


def masked_env(env: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """The environment as logs, run.json and reports show it: values of secret-looking names masked."""
    return tuple((key, MASK if SECRET_NAME.search(key) else value) for key, value in env)


@dataclass(frozen=True)
class ShellCommand:
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = field(default=())
    cwd: str | None = None

    def render(self) -> str:
        """The POSIX shell line that runs this command, every part quoted."""
        parts: list[str] = []
        if self.cwd:
            parts += ["cd", shlex.quote(self.cwd), "&&"]
        if self.env:
            parts.append("env")
            parts += [shlex.quote(f"{key}={value}") for key, value in self.env]
        parts += [shlex.quote(arg) for arg in self.argv]
        return " ".join(parts)

    def __str__(self) -> str:
        return self.render()


def shell_path(path: str) -> str:
    """Quote a path for the shell, keeping a leading ~/ expandable."""
    if path == "~" or path.startswith("~/"):
        rest = path[2:]
        return '"$HOME"' + ("/" + shlex.quote(rest) if rest else "")
    return shlex.quote(path)


def command(*argv: str, env: dict[str, str] | None = None, cwd: str | None = None) -> ShellCommand:
    return ShellCommand(tuple(argv), tuple(sorted((env or {}).items())), cwd)
