"""Calls and functions that mean "this thread is waiting", by kind of wait."""
from __future__ import annotations

import re

# Calls in which a CPU thread blocks until GPU work completes. A buffer swap blocks while the driver waits
# for the frames it has queued to render (or for vsync, when vsync is on).
SWAP_CALLS = ("eglSwapBuffers", "glXSwapBuffers")
GL_WAIT_CALLS = ("glFinish", "glClientWaitSync", "eglClientWaitSync", "eglClientWaitSyncKHR", "glWaitSync",
                 "glReadPixels", "glGetQueryObjectuiv", "glGetQueryObjectui64v", "glMapBufferRange", *SWAP_CALLS)
CUDA_WAIT_CALLS = ("cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaMemcpy",
                   "cuCtxSynchronize", "cuStreamSynchronize", "cuEventSynchronize", "cuMemcpyDtoH", "cuMemcpyHtoD")
# Frames in CPU samples that mean "spinning or sleeping until the GPU is done" (TFLite's GPU delegate...).
WAIT_SYMBOL = re.compile(r"WaitForCompletion|ClientWaitSync|glFinish|cu(da)?(Stream|Device|Ctx|Event)Synchronize|"
                         r"nvgpu.*wait|NvRmFence|fence_wait", re.IGNORECASE)
# OS runtime calls that block without using the CPU.
BLOCKING_CALLS = ("nanosleep", "clock_nanosleep", "usleep", "sleep", "select", "pselect6", "poll", "ppoll",
                  "epoll_wait", "epoll_pwait", "read", "pread64", "readv", "recv", "recvfrom", "recvmsg", "write",
                  "fsync", "pthread_cond_wait", "pthread_cond_timedwait", "pthread_mutex_lock", "sem_wait",
                  "sem_timedwait", "pthread_join", "waitpid", "wait4", "futex", "ioctl", "open", "open64", "fopen")

# the call lists above by the table that records them
WAIT_TABLES = {"OPENGL_API": GL_WAIT_CALLS, "CUPTI_ACTIVITY_KIND_RUNTIME": CUDA_WAIT_CALLS, "OSRT_API": BLOCKING_CALLS}
