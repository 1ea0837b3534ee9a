"""Calls and functions that mean "this thread is waiting", by what it waits for."""
from __future__ import annotations

import re

# a CUDA call's versioned spelling in an export (cudaMemcpy_v3020): its name is the part before
VERSIONED = re.compile(r"_v\d+$")


def plain_name(value: str) -> str:
    """'cudaMemcpy_v3020' -> 'cudaMemcpy'."""
    return VERSIONED.sub("", value)


# Calls in which a CPU thread blocks until GPU work completes. A buffer swap blocks while the driver waits
# for the frames it has queued to render (or for vsync, when vsync is on).
SWAP_CALLS = ("eglSwapBuffers", "glXSwapBuffers")
GL_WAIT_CALLS = ("glFinish", "glClientWaitSync", "eglClientWaitSync", "eglClientWaitSyncKHR", "glWaitSync",
                 "glReadPixels", "glGetQueryObjectuiv", "glGetQueryObjectui64v", "glMapBufferRange", *SWAP_CALLS)
# CUDA's synchronisations, and its synchronous copies (to or from host memory; a copy queued with an Async call from
# or to pageable memory is one too: gpu_busy.synchronous_copies finds those by the copy's memory kinds)
CUDA_WAIT_CALLS = ("cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaThreadSynchronize",
                   "cudaMemcpy", "cudaMemcpy2D", "cudaMemcpy3D", "cudaMemcpyToSymbol", "cudaMemcpyFromSymbol",
                   "cudaMemcpyPeer", "cudaMemcpyToArray", "cudaMemcpyFromArray", "cuCtxSynchronize",
                   "cuStreamSynchronize", "cuEventSynchronize", "cuMemcpy", "cuMemcpyDtoH", "cuMemcpyHtoD",
                   "cuMemcpy2D", "cuMemcpy3D", "cuMemcpyPeer", "cuMemcpyAtoH", "cuMemcpyHtoA")
# Frames in CPU samples that mean "spinning or sleeping until the GPU is done" (TFLite's GPU delegate...).
WAIT_SYMBOL = re.compile(r"WaitForCompletion|ClientWaitSync|glFinish|cu(da)?(Stream|Device|Ctx|Event)Synchronize|"
                         r"nvgpu.*wait|NvRmFence|fence_wait", re.IGNORECASE)
# Calls that only wait for the GPU: time in them is a wait even on a CPU (CUDA's default synchronisation
# spins). A swap, a read-back or a mapping also copies, so time in those counts as a wait only while blocked.
GL_SYNC_CALLS = ("glFinish", "glClientWaitSync", "eglClientWaitSync", "eglClientWaitSyncKHR", "glWaitSync",
                 "glGetQueryObjectuiv", "glGetQueryObjectui64v")
# the tables of GPU and driver calls made on the CPU, and those of their calls that only wait for the GPU
API_TABLES = {"OPENGL_API": GL_SYNC_CALLS, "CUPTI_ACTIVITY_KIND_RUNTIME": CUDA_WAIT_CALLS}

# OS runtime calls that block, by what they wait for
SLEEP_CALLS = ("nanosleep", "clock_nanosleep", "usleep", "sleep", "pause")
# waits on the process's other threads
SYNC_CALLS = ("pthread_cond_wait", "pthread_cond_timedwait", "pthread_cond_clockwait", "pthread_mutex_lock",
              "pthread_mutex_timedlock", "pthread_rwlock_rdlock", "pthread_rwlock_wrlock",
              "pthread_rwlock_timedrdlock", "pthread_rwlock_timedwrlock", "pthread_barrier_wait", "pthread_join",
              "pthread_timedjoin_np", "sem_wait", "sem_timedwait", "sem_clockwait", "futex")
# socket calls: traffic with the display server when made inside a window-system or GL call (Xlib and xcb
# write requests with writev, wait with poll, read replies with recvmsg; Wayland sends with sendmsg), or
# with a display library on their stack
SOCKET_CALLS = ("poll", "ppoll", "select", "pselect6", "epoll_wait", "epoll_pwait", "writev", "sendmsg", "recvmsg",
                "recv", "recvfrom", "send", "sendto")
# every other call that blocks: files, pipes, other sockets, devices, child processes, signals
OTHER_BLOCKING_CALLS = ("read", "pread64", "readv", "preadv", "write", "pwrite64", "pwritev", "fsync", "fdatasync",
                        "msync", "ioctl", "open", "open64", "openat", "fopen", "fopen64", "fread", "fwrite", "fgets",
                        "getline", "getdelim", "fflush", "fclose", "close", "accept", "accept4", "connect",
                        "waitpid", "wait4", "waitid", "wait", "sigsuspend", "sigtimedwait", "sigwaitinfo",
                        "mq_receive", "mq_timedreceive", "msgrcv", "semop", "semtimedop", "flock")
BLOCKING_CALLS = SLEEP_CALLS + SYNC_CALLS + SOCKET_CALLS + OTHER_BLOCKING_CALLS
# the calls with which one thread wakes another waiting in a SYNC_CALLS call
WAKE_CALLS = ("pthread_cond_signal", "pthread_cond_broadcast", "sem_post", "pthread_mutex_unlock",
              "pthread_barrier_wait")
# libraries a display server's client traffic passes through (X11, xcb, Wayland)
DISPLAY_LIBRARY = re.compile(r"lib(X11|xcb|X11-xcb|wayland-client)\.so", re.IGNORECASE)
