"""A command is a value: argv, environment and working directory, quoted only when rendered."""
from __future__ import annotations

import shlex
from dataclasses import dataclass, field


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


def command(*argv: str, env: dict[str, str] | None = None, cwd: str | None = None) -> ShellCommand:
    return ShellCommand(tuple(argv), tuple(sorted((env or {}).items())), cwd)
