"""The ssh command line a play would run, read as OpenSSH reads it: which port, user, keys, hop, known_hosts file
and connect timeout it ends up with, and which of its options orchestrate cannot honour.

Ansible's ssh connection builds ``ssh [ssh_args] [-o StrictHostKeyChecking=no] [-o Port=P] [-o IdentityFile=K]
[-o User=U] -o ConnectTimeout=T [ssh_common_args] [ssh_extra_args] HOST``; ssh takes the first value it is given
for each setting (``-i`` adds a key each time), and whichever of ProxyJump and ProxyCommand comes first keeps
the other out. Pure: words in, settings out; the tests hold it to ``ssh -G``.
"""
from __future__ import annotations

import re
import shlex
import socket
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
FLAG_SETTINGS = {"-p": "port", "-l": "user", "-i": "identityfile", "-F": "configfile"}
TAKES_A_VALUE = set("bceilmopBDEFIJLOPQRSwW")


@dataclass(frozen=True)
class SshSettings:
    """What ssh would use from its command line; None where the command line leaves it to ssh's config."""

    port: int | None = None
    user: str | None = None
    key_files: tuple[str, ...] = ()
    proxy_jump: str | None = None
    proxy_command: str | None = None
    known_hosts: str | None = None          # UserKnownHostsFile as written: one or more files, or 'none'
    connect_timeout: float | None = None
    config_file: str | None = None
    refused: tuple[str, ...] = field(default=())   # each option orchestrate cannot honour, as written


def split_args(text: str | None) -> list[str]:
    """An ssh arguments option as Ansible splits it (shlex, quotes kept out)."""
    if not text:
        return []
    return shlex.split(text)


def play_command(ssh_args: str | None, common: str | None, extra: str | None, port: int | None, key: str | None,
                 user: str | None, timeout: float | int | None) -> list[str]:
    """The arguments Ansible's ssh connection passes before the host, in its order (host_key_checking false, which
    it would add after ssh_args, is refused before this is read)."""
    words = split_args(ssh_args)
    if port is not None:
        words += ["-o", f"Port={port}"]
    if key:
        words += ["-o", f'IdentityFile="{key}"']
    if user:
        words += ["-o", f'User="{user}"']
    if timeout is not None:
        words += ["-o", f"ConnectTimeout={timeout}"]
    return words + split_args(common) + split_args(extra)


# an -o value as ssh reads it: the keyword up to white space or '=', then white space, at most one '=', white space
_KEYWORD = re.compile(r"^\s*([^\s=]+)[ \t]*=?[ \t]*(.*)$", re.S)
_TIME = re.compile(r"^(?:[0-9]+[smhdw]?)+$", re.I)
_TIME_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


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
                keyword = _KEYWORD.match(value)
                key, rest = (keyword.group(1), keyword.group(2)) if keyword else (value, "")
                found.append((key.lower(), _unquote(rest.strip()), f"-o {value}"))
            else:
                found.append((FLAG_SETTINGS.get(f"-{letter}", f"-{letter}"), value, f"-{letter} {value}"))
    return found


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1]
    return value


def read_command(words: list[str]) -> SshSettings:
    """The settings ssh would take from these arguments (first value wins, keys add up); what ssh itself refuses
    (a -J after a hop is set, a port or a time it cannot read) is refused too."""
    chosen: dict[str, str] = {}
    keys: list[str] = []
    refused: list[str] = []
    for setting, value, written in _options(words):
        if setting == "-J":  # ssh stops at a -J that comes after a hop is set
            if "proxyjump" in chosen:
                refused.append(f"{written} after another jump host (ssh takes a single -J)")
            elif "proxycommand" in chosen:
                refused.append(f"{written} after a ProxyCommand (ssh refuses -J then)")
            setting = "proxyjump"
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
    port = _port(chosen.get("port"), refused)
    timeout = _seconds(chosen.get("connecttimeout"), refused)
    return SshSettings(port=port, user=chosen.get("user"), key_files=tuple(keys),
                       proxy_jump=_none(chosen.get("proxyjump")), proxy_command=_none(chosen.get("proxycommand")),
                       known_hosts=chosen.get("userknownhostsfile"), connect_timeout=timeout,
                       config_file=chosen.get("configfile"), refused=tuple(dict.fromkeys(refused)))


def _none(value: str | None) -> str | None:
    """ssh's 'none' (no hop, whatever the ssh config says) kept as 'none'; unset stays None."""
    return "none" if value is not None and value.lower() == "none" else value


def _port(value: str | None, refused: list[str]) -> int | None:
    """A port as ssh's a2port reads it: a number from 1 to 65535, or a service's name."""
    if value is None:
        return None
    if value.isascii() and value.isdigit():
        if 0 < int(value) < 65536:
            return int(value)
    else:
        try:
            return socket.getservbyname(value, "tcp")
        except OSError:
            pass
    refused.append(f"Port={value} (no port ssh can read)")
    return None


def _seconds(value: str | None, refused: list[str]) -> float | None:
    """A time as ssh's convtime reads it: '30', '1m', '1h30m'."""
    if value is None:
        return None
    if not _TIME.match(value):
        refused.append(f"ConnectTimeout={value} (no time ssh can read)")
        return None
    return float(sum(int(number) * _TIME_UNITS[unit.lower()]
                     for number, unit in re.findall(r"([0-9]+)([smhdw]?)", value, re.I)))
