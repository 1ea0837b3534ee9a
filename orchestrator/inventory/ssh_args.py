"""The ssh command line a play would run, read as OpenSSH reads it: which port, user, keys, hop, known_hosts file
and connect timeout it ends up with, and which of its options orchestrate cannot honour.

Ansible's ssh connection builds ``ssh [ssh_args] [-o StrictHostKeyChecking=no] [-o Port=P] [-o IdentityFile=K]
[-o User=U] -o ConnectTimeout=T [ssh_common_args] [ssh_extra_args] HOST``; ssh takes the first value it is given
for each setting (``-i`` adds a key each time), and whichever of ProxyJump and ProxyCommand comes first keeps
the other out. Pure: words in, settings out; the tests hold it to ``ssh -G``.
"""
from __future__ import annotations

import shlex
from dataclasses import dataclass, field

# what the transports honour: ssh's setting name (lower case) -> the field below
HONOURED = {"port": "port", "user": "user", "identityfile": "key_files", "proxyjump": "proxy_jump",
            "proxycommand": "proxy_command", "userknownhostsfile": "known_hosts", "connecttimeout": "connect_timeout"}
# settings that change nothing of where, as whom, with which key or through which hop orchestrate connects: its
# own connections are shared and kept alive its own way (Ansible's defaults set the first three)
WITHOUT_EFFECT = {"controlmaster", "controlpersist", "controlpath", "compression", "identitiesonly",
                  "kbdinteractiveauthentication", "preferredauthentications", "passwordauthentication",
                  "serveraliveinterval", "serveralivecountmax", "tcpkeepalive", "loglevel", "batchmode",
                  "connectionattempts", "addressfamily", "hashknownhosts", "pubkeyauthentication",
                  "gssapiauthentication"}
# only these values: anything else weakens a check orchestrate keeps, or forwards what it never forwards
ONLY = {"stricthostkeychecking": {"yes", "true"}, "forwardagent": {"no", "false"}, "forwardx11": {"no", "false"}}
FLAGS_WITHOUT_EFFECT = set("Cqv46T")
FLAG_SETTINGS = {"-p": "port", "-l": "user", "-i": "identityfile", "-J": "proxyjump", "-F": "configfile"}
TAKES_A_VALUE = set("bceilmopBDEFIJLOPQRSwW")


@dataclass(frozen=True)
class SshSettings:
    """What ssh would use from its command line; None where the command line leaves it to ssh's config."""

    port: int | None = None
    user: str | None = None
    key_files: tuple[str, ...] = ()
    proxy_jump: str | None = None
    proxy_command: str | None = None
    known_hosts: str | None = None
    connect_timeout: float | None = None
    config_file: str | None = None
    refused: tuple[str, ...] = field(default=())   # each option orchestrate cannot honour, as written


def split_args(text: str | None) -> list[str]:
    """An ssh arguments option as Ansible splits it (shlex, quotes kept out)."""
    if not text:
        return []
    return shlex.split(text)


def play_command(ssh_args: str | None, common: str | None, extra: str | None, port: int | None, key: str | None,
                 user: str | None, timeout: float | int | None, host_key_checking: bool | None) -> list[str]:
    """The arguments Ansible's ssh connection passes before the host, in its order."""
    words = split_args(ssh_args)
    if host_key_checking is False:
        words += ["-o", "StrictHostKeyChecking=no"]
    if port is not None:
        words += ["-o", f"Port={port}"]
    if key:
        words += ["-o", f'IdentityFile="{key}"']
    if user:
        words += ["-o", f'User="{user}"']
    if timeout is not None:
        words += ["-o", f"ConnectTimeout={timeout}"]
    return words + split_args(common) + split_args(extra)


def _options(words: list[str]) -> list[tuple[str, str, str]]:
    """(setting, value, as written) in order; a flag without value is ('-X', '', '-X')."""
    found: list[tuple[str, str, str]] = []
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if not word.startswith("-") or word == "-":
            found.append(("?", word, word))
            continue
        letters = word[1:]
        while letters:
            letter, letters = letters[0], letters[1:]
            if letter not in TAKES_A_VALUE:
                found.append((f"-{letter}", "", f"-{letter}"))
                continue
            value = letters
            if not value and i < len(words):
                value, i = words[i], i + 1
            letters = ""
            if letter == "o":
                key, _, rest = value.strip().partition("=") if "=" in value.split(" ", 1)[0] \
                    else value.strip().partition(" ")
                found.append((key.strip().lower(), _unquote(rest.strip()), f"-o {value}"))
            else:
                found.append((FLAG_SETTINGS.get(f"-{letter}", f"-{letter}"), value, f"-{letter} {value}"))
    return found


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1]
    return value


def read_command(words: list[str]) -> SshSettings:
    """The settings ssh would take from these arguments (first value wins, keys add up)."""
    chosen: dict[str, str] = {}
    keys: list[str] = []
    refused: list[str] = []
    for setting, value, written in _options(words):
        if setting == "identityfile":
            keys.append(value)
        elif setting in ("proxyjump", "proxycommand"):
            if "proxyjump" not in chosen and "proxycommand" not in chosen:
                chosen[setting] = value
        elif setting in HONOURED or setting == "configfile":
            chosen.setdefault(setting, value)
        elif setting in WITHOUT_EFFECT or (setting.startswith("-") and setting[1:] in FLAGS_WITHOUT_EFFECT):
            continue
        elif setting in ONLY and value.lower() in ONLY[setting]:
            continue
        else:
            refused.append(written)
    jump = chosen.get("proxyjump")
    command = chosen.get("proxycommand")
    port = _number(chosen.get("port"), refused, "Port")
    timeout = _number(chosen.get("connecttimeout"), refused, "ConnectTimeout")
    return SshSettings(port=int(port) if port is not None else None, user=chosen.get("user"), key_files=tuple(keys),
                       proxy_jump=None if jump in (None, "none") else jump,
                       proxy_command=None if command in (None, "none") else command,
                       known_hosts=_first_file(chosen.get("userknownhostsfile")),
                       connect_timeout=float(timeout) if timeout is not None else None,
                       config_file=chosen.get("configfile"), refused=tuple(dict.fromkeys(refused)))


def _number(value: str | None, refused: list[str], name: str) -> int | None:
    if value is None:
        return None
    if not value.isdigit():
        refused.append(f"{name}={value}")
        return None
    return int(value)


def _first_file(value: str | None) -> str | None:
    """UserKnownHostsFile holds one or more files; ssh records new keys in the first."""
    return value.split()[0] if value else None
