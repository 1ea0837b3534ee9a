"""The agent's reading of the board's X servers: their command lines as display managers write them, Xauthority
files as xauth writes them, and the X11 connection set-up's bytes (the protocol's own layout)."""
from __future__ import annotations

import shutil
import struct
import subprocess

import pytest

from remote_agent import xdisplay

# As published (ps lines): GDM on Ubuntu 18.04 and 22.04, the greeter as the gdm user, LightDM.
# Sources: GNOME gdm daemon/gdm-x-session.c (how the line is built), neutrinolabs/xrdp issue 1550,
# TigerVNC/tigervnc pull 1799, and LightDM's X command line as its users post it.
GDM_1804 = "/usr/lib/xorg/Xorg vt2 -displayfd 3 -auth /run/user/1000/gdm/Xauthority -background none -noreset " \
           "-keeptty -verbose 3"
GDM_GREETER = "/usr/lib/xorg/Xorg vt1 -displayfd 3 -auth /run/user/120/gdm/Xauthority -nolisten tcp -background " \
              "none -noreset -keeptty -novtswitch -verbose 3"
LIGHTDM = "X -core :0 -seat seat0 -auth /var/run/lightdm/root/:0 -nolisten tcp vt7 -novtswitch"


@pytest.mark.parametrize("line, expected", [
    (GDM_1804, (None, "/run/user/1000/gdm/Xauthority")),
    (GDM_GREETER, (None, "/run/user/120/gdm/Xauthority")),
    (LIGHTDM, (0, "/var/run/lightdm/root/:0")),
    ("Xvfb :99 -screen 0 1280x720x24", (99, None)),
    ("Xvfb -displayfd 5 -auth /tmp/a", (None, "/tmp/a")),
])
def test_display_managers_command_lines(line, expected):
    assert xdisplay.parse_server_argv(line.split()) == expected


def test_the_listening_socket_names_the_display_gdm_left_out(tmp_path):
    """GDM starts Xorg with -displayfd: the number is found from the socket the process listens on."""
    import os
    import socket
    folder = tmp_path / "tmp" / ".X11-unix"
    folder.mkdir(parents=True)
    with socket.socket(socket.AF_UNIX) as listening:
        listening.bind(str(folder / "X42"))
        listening.listen()
        assert xdisplay.listening_display(os.getpid()) == 42
    assert xdisplay.listening_display(os.getpid()) is None


@pytest.mark.parametrize("display, number", [(":0", 0), (":1.0", 1), ("unix:12", 12), ("host:0", None),
                                             ("auto", None), ("", None), (None, None)])
def test_display_numbers(display, number):
    assert xdisplay.display_number(display) == number


@pytest.mark.skipif(not shutil.which("xauth"), reason="needs xauth (the README's test command installs it)")
def test_xauthority_as_xauth_writes_it(tmp_path):
    path = tmp_path / "Xauthority"
    for entry in ("add :7 MIT-MAGIC-COOKIE-1 00112233445566778899aabbccddeeff",
                  "add board/unix:0 MIT-MAGIC-COOKIE-1 ffeeddccbbaa99887766554433221100"):
        subprocess.run(["xauth", "-q", "-f", str(path), *entry.split()], check=True)
    entries = xdisplay.parse_xauthority(path.read_bytes())
    assert [(e[2], e[3], e[4].hex()) for e in entries] == [
        ("7", "MIT-MAGIC-COOKIE-1", "00112233445566778899aabbccddeeff"),
        ("0", "MIT-MAGIC-COOKIE-1", "ffeeddccbbaa99887766554433221100")]
    assert xdisplay.read_cookie(str(path), 0).hex() == "ffeeddccbbaa99887766554433221100"
    assert xdisplay.read_cookie(str(path), 3) is None
    assert xdisplay.parse_xauthority(path.read_bytes()[:-5]) == entries[:1]  # a cut entry ends the reading


def test_a_client_picks_this_hosts_entry_then_a_wildcard_then_any():
    other = (xdisplay.FAMILY_LOCAL, b"another-board", "0", xdisplay.COOKIE, b"A")
    wild = (xdisplay.FAMILY_WILD, b"", "", xdisplay.COOKIE, b"B")
    own = (xdisplay.FAMILY_LOCAL, b"nano01", "0", xdisplay.COOKIE, b"C")
    elsewhere = (xdisplay.FAMILY_LOCAL, b"nano01", "1", xdisplay.COOKIE, b"D")
    assert xdisplay.cookie_for([other, wild, own, elsewhere], 0, "nano01") == b"C"
    assert xdisplay.cookie_for([other, wild, elsewhere], 0, "nano01") == b"B"
    assert xdisplay.cookie_for([other, elsewhere], 0, "nano01") == b"A"
    assert xdisplay.cookie_for([elsewhere], 0, "nano01") is None


def test_a_fifo_where_a_cookie_file_should_be_is_not_waited_for(tmp_path):
    import os
    os.mkfifo(tmp_path / "Xauthority")
    assert xdisplay.read_cookie(str(tmp_path / "Xauthority"), 0) is None
    assert xdisplay.read_cookie(str(tmp_path / "missing"), 0) is None


def test_nothing_listening_is_no_server_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(xdisplay, "SOCKETS", str(tmp_path / "X{}"))
    assert xdisplay.try_connect(4242, None) == (None, f"nothing listens on {tmp_path / 'X4242'}")


def test_the_connection_set_up_is_the_protocols_layout():
    request = xdisplay.setup_request(bytes(range(16)))
    assert request[:12] == struct.pack("<BxHHHHxx", 0x6C, 11, 0, 18, 16)
    assert request[12:32] == b"MIT-MAGIC-COOKIE-1\0\0" and request[32:] == bytes(range(16))
    assert xdisplay.setup_request(None) == struct.pack("<BxHHHHxx", 0x6C, 11, 0, 0, 0)
    reason = b"Authorization required, but no authorization protocol specified\n"
    head = bytes([0, len(reason)]) + struct.pack("<HHH", 11, 0, (len(reason) + 3) // 4)
    assert xdisplay.parse_setup_reply(head, reason) == (
        False, "Authorization required, but no authorization protocol specified")
    assert xdisplay.parse_setup_reply(bytes([1, 0, 11, 0, 0, 0, 0, 0]), b"") == (True, None)


def test_auto_prefers_the_desktop_among_servers_whose_socket_is_here(tmp_path, monkeypatch):
    sockets = tmp_path / "X{}"
    for number in (0, 1, 5):
        (tmp_path / f"X{number}").touch()
    monkeypatch.setattr(xdisplay, "SOCKETS", str(sockets))
    servers = [{"pid": 1, "program": "Xvfb", "display": 0, "auth": None},
               {"pid": 2, "program": "Xorg", "display": 1, "auth": "/run/user/1000/gdm/Xauthority"},
               {"pid": 3, "program": "Xorg", "display": 2, "auth": None},  # another machine's: no socket here
               {"pid": 4, "program": "Xvfb", "display": None, "auth": None}]
    assert xdisplay.desktop_display(servers) == ":1"
    assert xdisplay.desktop_display(servers[:1]) == ":0"
    assert xdisplay.desktop_display(servers[2:]) is None
