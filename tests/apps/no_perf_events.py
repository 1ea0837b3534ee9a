"""Runs a command with perf_event_open denied (EACCES), as a container's seccomp profile can deny it (Docker's
default one does): nsys under it exits 0 and writes a report that holds no CPU samples.

    python3 no_perf_events.py COMMAND [ARGS...]
"""
import ctypes
import os
import platform
import struct
import sys

PERF_EVENT_OPEN = {"x86_64": 298, "aarch64": 241}[platform.machine()]
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}[platform.machine()]
LOAD_WORD, JUMP_IF_EQUAL, RETURN = 0x20, 0x15, 0x06  # BPF_LD|BPF_W|BPF_ABS, BPF_JMP|BPF_JEQ|BPF_K, BPF_RET|BPF_K
ALLOW, EACCES = 0x7FFF0000, 0x00050000 | 13           # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO | EACCES
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2


def step(code, k, if_true=0, if_false=0):
    return struct.pack("HBBI", code, if_true, if_false, k)


# seccomp_data: nr at offset 0, arch at 4; any other architecture's calls pass untouched
PROGRAM = b"".join([step(LOAD_WORD, 4), step(JUMP_IF_EQUAL, AUDIT_ARCH, 1, 0), step(RETURN, ALLOW),
                    step(LOAD_WORD, 0), step(JUMP_IF_EQUAL, PERF_EVENT_OPEN, 0, 1), step(RETURN, EACCES),
                    step(RETURN, ALLOW)])


class Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def main():
    code = ctypes.create_string_buffer(PROGRAM)
    program = Program(len(PROGRAM) // 8, ctypes.addressof(code))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) or libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER,
                                                                   ctypes.byref(program), 0, 0):
        sys.exit("no_perf_events: seccomp refused: " + os.strerror(ctypes.get_errno()))
    os.execvp(sys.argv[1], sys.argv[1:])


if __name__ == "__main__":
    main()
