"""Frames paced by a socket whose writer waits: a child process sends a message every 10 ms over a Unix socket
pair (sleeping between), and each frame receives one (blocking in recv) after 1 ms of its own work."""
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # its files lie beside it (not beside a link's target)
from verdict_frames import frames, work_ms  # noqa: E402

mine, theirs = socket.socketpair()
child = os.fork()
if child == 0:
    mine.close()
    while True:
        time.sleep(0.010)
        try:
            theirs.send(b"tick")
        except OSError:
            os._exit(0)
theirs.close()
for _ in frames(250):
    work_ms(1)
    mine.recv(4)
mine.close()
os.kill(child, 9)
os.waitpid(child, 0)
