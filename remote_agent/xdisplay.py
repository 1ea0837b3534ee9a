"""The board's own X server: which displays run, the cookie each was started with, and whether a client
gets in with it. GDM and LightDM start Xorg with ``-auth FILE``; an X server with a cookie refuses a
client without it ("No protocol specified"), root included, so the app needs ``XAUTHORITY``.

Python 3.6+, stdlib only: the X11 connection set-up is a few bytes on the server's Unix socket.
"""
import errno
import os
import re
import socket
import stat
import struct

X_SERVERS = ("Xorg", "X", "Xvfb", "Xwayland", "Xephyr", "Xvnc", "Xtigervnc", "Xorg.bin")
DESKTOP_SERVERS = ("Xorg", "X", "Xorg.bin")
COOKIE = "MIT-MAGIC-COOKIE-1"
FAMILY_LOCAL = 256
FAMILY_WILD = 65535
RUN_MARK = b"ORCHESTRATE_RUN"  # in the environment of the private Xvfb a capture starts (capture.RUN_MARK)
SOCKETS = "/tmp/.X11-unix/X{}"
_DISPLAY = re.compile(r"^(?:unix)?:(\d+)(?:\.\d+)?$")


def display_number(display):
    """':1', ':1.0' or 'unix:1' -> 1; None for a remote or malformed display."""
    match = _DISPLAY.match(display or "")
    return int(match.group(1)) if match else None


def parse_server_argv(argv):
    """An X server's arguments -> (display number or None, -auth file or None)."""
    number, auth = None, None
    for i, arg in enumerate(argv[1:], 1):
        if arg == "-auth" and i + 1 < len(argv):
            auth = argv[i + 1]
        elif number is None and _DISPLAY.match(arg) and argv[i - 1] not in ("-auth", "-displayfd"):
            number = display_number(arg)
    return number, auth


def _proc_argv(pid):
    try:
        with open("/proc/{}/cmdline".format(pid), "rb") as handle:
            return [part.decode("utf-8", "replace") for part in handle.read().split(b"\0") if part]
    except (OSError, IOError):
        return []


def listening_display(pid, unix_table=None):
    """The display number an X server listens on, from its sockets (GDM starts Xorg with -displayfd, not :N)."""
    inodes = set()
    try:
        for fd in os.listdir("/proc/{}/fd".format(pid)):
            try:
                link = os.readlink("/proc/{}/fd/{}".format(pid, fd))
            except (OSError, IOError):
                continue
            if link.startswith("socket:["):
                inodes.add(link[8:-1])
    except (OSError, IOError):
        return None
    if unix_table is None:
        try:
            with open("/proc/net/unix") as handle:
                unix_table = handle.read()
        except (OSError, IOError):
            return None
    for line in unix_table.splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 8 and fields[6] in inodes:
            match = re.search(r"/tmp/\.X11-unix/X(\d+)$", fields[7])
            if match:
                return int(match.group(1))
    return None


def _environment(pid):
    try:
        with open("/proc/{}/environ".format(pid), "rb") as handle:
            return dict(item.split(b"=", 1) for item in handle.read().split(b"\0") if b"=" in item)
    except (OSError, IOError):
        return {}


def x_servers():
    """The X servers running here: [{pid, program, display, auth}] (display None when unknown)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        argv = _proc_argv(name)
        if not argv or os.path.basename(argv[0]) not in X_SERVERS:
            continue
        if _environment(name).get(RUN_MARK):  # a capture's own private Xvfb, not a desktop
            continue
        number, auth = parse_server_argv(argv)
        if number is None:
            number = listening_display(name)
        found.append({"pid": int(name), "program": os.path.basename(argv[0]), "display": number, "auth": auth})
    return found


def _counted(data, at):
    """A 16-bit big-endian length and that many bytes at offset at -> (bytes, next offset)."""
    if at + 2 > len(data):
        raise ValueError("cut")
    size = struct.unpack(">H", data[at:at + 2])[0]
    if at + 2 + size > len(data):
        raise ValueError("cut")
    return data[at + 2:at + 2 + size], at + 2 + size


def parse_xauthority(data):
    """An Xauthority file's bytes -> [(family, address, number, name, cookie bytes)]; stops at a cut entry."""
    entries, at = [], 0
    while at + 2 <= len(data):
        family = struct.unpack(">H", data[at:at + 2])[0]
        try:
            address, at = _counted(data, at + 2)
            number, at = _counted(data, at)
            name, at = _counted(data, at)
            cookie, at = _counted(data, at)
        except ValueError:
            break
        entries.append((family, address, number.decode("ascii", "replace"), name.decode("ascii", "replace"),
                        cookie))
    return entries


def cookie_for(entries, number, hostname=None):
    """The MIT-MAGIC-COOKIE-1 of display number in parsed entries (an entry with no number fits any), as a
    client picks it: this host's own entry first, then a wildcard one, then any."""
    host = (hostname or socket.gethostname()).encode()
    fitting = [(family, address, cookie) for family, address, entry_number, name, cookie in entries
               if name == COOKIE and entry_number in (str(number), "")]
    for rank in (lambda f, a: f == FAMILY_LOCAL and a == host, lambda f, a: f == FAMILY_WILD, lambda f, a: True):
        for family, address, cookie in fitting:
            if rank(family, address):
                return cookie
    return None


def read_cookie(path, number):
    """The cookie for display number in the file at path, or None. Only a regular file is read (opened without
    waiting: a path from another user's environment could name a FIFO)."""
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except (OSError, IOError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            return None
        return cookie_for(parse_xauthority(os.read(handle, 1 << 20)), number)
    except (OSError, IOError):
        return None
    finally:
        os.close(handle)


def _session_authorities(number):
    """XAUTHORITY of the processes on display number (a desktop session sets it: GNOME's is
    /run/user/UID/gdm/Xauthority), then ~/.Xauthority of each login user."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        env = _environment(name)
        if display_number(env.get(b"DISPLAY", b"").decode("utf-8", "replace")) == number and b"XAUTHORITY" in env:
            path = env[b"XAUTHORITY"].decode("utf-8", "replace")
            if path not in found:
                found.append(path)
    try:
        import pwd
        homes = [user.pw_dir for user in pwd.getpwall() if user.pw_uid >= 1000 and user.pw_dir]
    except ImportError:
        homes = []
    found += [os.path.join(home, ".Xauthority") for home in homes]
    return found


def cookie_files(number, servers=None):
    """The files holding a cookie for display number, in the order to try them: the server's -auth file (as
    it was started), a desktop session's XAUTHORITY, a login user's ~/.Xauthority."""
    servers = x_servers() if servers is None else servers
    candidates = [s["auth"] for s in servers if s["display"] == number and s["auth"]]
    candidates += _session_authorities(number)
    return [path for i, path in enumerate(candidates)
            if path not in candidates[:i] and read_cookie(path, number) is not None]


def setup_request(cookie):
    """The X11 connection set-up (little-endian, protocol 11.0) with a MIT-MAGIC-COOKIE-1 or none."""
    name = COOKIE.encode() if cookie is not None else b""
    data = cookie or b""

    def pad(raw):
        return raw + b"\0" * (-len(raw) % 4)

    return struct.pack("<BxHHHHxx", 0x6C, 11, 0, len(name), len(data)) + pad(name) + pad(data)


def parse_setup_reply(head, rest):
    """The first 8 bytes of the server's answer and what follows -> (accepted, reason)."""
    status = head[0]
    if status == 1:
        return True, None
    reason_length = head[1]
    reason = rest[:reason_length].decode("latin-1", "replace").strip() if status == 0 else "more authentication asked"
    return False, reason or "refused"


NO_SERVER = (errno.ENOENT, errno.ECONNREFUSED)


def try_connect(number, cookie, timeout=5.0):
    """(accepted, reason) of a set-up on display number's socket with this cookie (None: no cookie); accepted is
    None when no server listens there (no socket, or a refused connection, on both the file and the abstract
    socket), False when one refused us or did not answer."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        try:
            sock.connect(SOCKETS.format(number))
        except (OSError, IOError) as first:
            try:
                sock.connect("\0" + SOCKETS.format(number))  # the abstract socket Xorg also listens on
            except (OSError, IOError) as second:
                if first.errno in NO_SERVER and second.errno in NO_SERVER:
                    return None, "nothing listens on {}".format(SOCKETS.format(number))
                raise
        sock.sendall(setup_request(cookie))
        head = _receive(sock, 8)
        length = struct.unpack("<H", head[6:8])[0] * 4
        rest = _receive(sock, min(length, 1 << 16)) if head[0] != 1 else b""
        return parse_setup_reply(head, rest)
    except (OSError, IOError, socket.timeout) as exc:
        return False, "it did not answer: {}".format(getattr(exc, "strerror", None) or exc)
    finally:
        sock.close()


def _receive(sock, size):
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise IOError("the X server closed the connection")
        data += chunk
    return data


def desktop_display(servers=None):
    """'auto': the board's own desktop, the lowest display of an Xorg, else of any X server, among those whose
    socket this machine's /tmp holds; None if none."""
    servers = x_servers() if servers is None else servers
    numbered = [s for s in servers if s["display"] is not None and os.path.exists(SOCKETS.format(s["display"]))]
    desktops = sorted(s["display"] for s in numbered if s["program"] in DESKTOP_SERVERS)
    others = sorted(s["display"] for s in numbered)
    chosen = (desktops or others or [None])[0]
    return None if chosen is None else ":{}".format(chosen)


def check_display(display):
    """Connect to display as the app will: {"mode": "use", "display", "xauthority"} when it lets us in (with the
    cookie it was started with, when it has one), else {"mode": "missing", "detail", "fix"}."""
    servers = x_servers()
    if display == "auto":
        display = desktop_display(servers)
        if display is None:
            return {"mode": "missing", "no_server": True,
                    "detail": "orchestrate_display is auto and no X server runs on the board",
                    "fix": "log in on the board's desktop, or set orchestrate_display to a display that runs"}
    number = display_number(display)
    if number is None:
        return {"mode": "missing", "detail": "DISPLAY {} is not a local display".format(display),
                "fix": "set orchestrate_display to the board's own, e.g. ':0'"}
    accepted, reason = try_connect(number, None)
    if accepted:
        return {"mode": "use", "display": display, "xauthority": None}
    if accepted is None:
        return {"mode": "missing", "no_server": True,
                "detail": "DISPLAY {} has no X server ({})".format(display, reason),
                "fix": "start the desktop (or X) on the board, or set orchestrate_display to one that runs"}
    files = cookie_files(number, servers)
    if not files:
        return {"mode": "missing", "detail": "the X server of {} refused us ({}) and no cookie for it was found "
                "(no -auth file, no session XAUTHORITY, no ~/.Xauthority holding one)".format(display, reason),
                "fix": "log in on the board's desktop (its session holds the cookie), or allow local clients "
                       "there: xhost +local:"}
    for path in files:
        accepted, reason = try_connect(number, read_cookie(path, number))
        if accepted:
            return {"mode": "use", "display": display, "xauthority": path}
    return {"mode": "missing", "detail": "the X server of {} refused the cookies in {} ({})".format(
        display, ", ".join(files), reason),
        "fix": "the desktop was restarted since: log in again, or allow local clients there: xhost +local:"}
