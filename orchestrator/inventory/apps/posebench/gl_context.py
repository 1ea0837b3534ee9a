"""A headless OpenGL 4.3 context that a tracer sees: for posebench's GL delegate.

Nsight Systems records OpenGL calls only when the GL libraries were loaded as the process started and
the calls go through their exported symbols. moderngl's own standalone context loads them later and calls
through private pointers, so nothing of it reaches a report. Here the process is started again with the
libraries in LD_PRELOAD (once, before anything else is imported), the EGL context is created and made
current through the global symbols, and moderngl is handed a loader that resolves every GL function the
same way. Outside a tracer the calls go straight to the driver, as before.

EGL display: Mesa's surfaceless platform where there is one (llvmpipe on a machine without a GPU), else
the default display (a Jetson's NVIDIA EGL, with or without X).
"""
import ctypes
import os

GL_LIBRARIES = ("libEGL.so.1", "libGL.so.1")
EGL_PLATFORM_SURFACELESS_MESA = 0x31DD
EGL_OPENGL_API = 0x30A2
EGL_RENDERABLE_TYPE, EGL_OPENGL_BIT, EGL_NONE = 0x3040, 0x0008, 0x3038
EGL_CONTEXT_MAJOR_VERSION, EGL_CONTEXT_MINOR_VERSION = 0x3098, 0x30FB
EGL_CONTEXT_OPENGL_PROFILE_MASK, EGL_CONTEXT_OPENGL_CORE_PROFILE_BIT = 0x30FD, 0x1


class ContextError(Exception):
    """No OpenGL 4.3 context could be made: what failed, in one line."""


def preloaded_environment(environ):
    """The environment to start this process again with, the GL libraries preloaded; None when they are."""
    preload = [part for part in environ.get("LD_PRELOAD", "").replace(" ", ":").split(":") if part]
    missing = [name for name in GL_LIBRARIES if name not in preload]
    if not missing:
        return None
    return dict(environ, LD_PRELOAD=":".join(preload + missing))


class GlobalLoader:
    """moderngl's loader: each GL function by its exported symbol, else by eglGetProcAddress."""

    def __init__(self, symbols, get_proc_address):
        self.symbols = symbols
        self.get_proc_address = get_proc_address

    def load_opengl_function(self, name):
        found = getattr(self.symbols, name, None)
        if found is not None:
            return ctypes.cast(found, ctypes.c_void_p).value or 0
        return self.get_proc_address(name.encode()) or 0

    def release(self):
        pass


def _function(symbols, name, result, *arguments):
    function = getattr(symbols, name)
    function.restype = result
    function.argtypes = list(arguments)
    return function


def headless_context():
    """A moderngl context on a new EGL context (OpenGL 4.3 core, no surface), current on this thread."""
    for name in GL_LIBRARIES:
        ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
    symbols = ctypes.CDLL(None)
    pointer, integer = ctypes.c_void_p, ctypes.c_int
    get_proc_address = _function(symbols, "eglGetProcAddress", pointer, ctypes.c_char_p)
    display = None
    platform_display = get_proc_address(b"eglGetPlatformDisplayEXT")
    if platform_display:
        display = ctypes.CFUNCTYPE(pointer, ctypes.c_uint, pointer, pointer)(platform_display)(
            EGL_PLATFORM_SURFACELESS_MESA, None, None)
    initialize = _function(symbols, "eglInitialize", integer, pointer, pointer, pointer)
    if not display or not initialize(display, None, None):
        display = _function(symbols, "eglGetDisplay", pointer, pointer)(None)
        if not display or not initialize(display, None, None):
            raise ContextError("EGL has no display to make an OpenGL context on")
    if not _function(symbols, "eglBindAPI", integer, ctypes.c_uint)(EGL_OPENGL_API):
        raise ContextError("EGL cannot bind the OpenGL API")
    config, count = pointer(), integer()
    wanted = (integer * 3)(EGL_RENDERABLE_TYPE, EGL_OPENGL_BIT, EGL_NONE)
    _function(symbols, "eglChooseConfig", integer, pointer, pointer, pointer, integer, pointer)(
        display, wanted, ctypes.byref(config), 1, ctypes.byref(count))
    version = (integer * 7)(EGL_CONTEXT_MAJOR_VERSION, 4, EGL_CONTEXT_MINOR_VERSION, 3,
                            EGL_CONTEXT_OPENGL_PROFILE_MASK, EGL_CONTEXT_OPENGL_CORE_PROFILE_BIT, EGL_NONE)
    # without a matching config, EGL_KHR_no_config_context's null config (a surfaceless context needs none)
    context = _function(symbols, "eglCreateContext", pointer, pointer, pointer, pointer, pointer)(
        display, config if count.value else None, None, version)
    if not context:
        raise ContextError("EGL made no OpenGL 4.3 context (the driver may lack compute shaders)")
    if not _function(symbols, "eglMakeCurrent", integer, pointer, pointer, pointer, pointer)(
            display, None, None, context):
        raise ContextError("EGL could not make the OpenGL context current without a surface")
    import moderngl
    moderngl.init_context(GlobalLoader(symbols, get_proc_address))
    return moderngl.get_context()


def restart_with_gl_preloaded(argv):
    """Start this program again with the GL libraries preloaded, unless they are (it then returns)."""
    environ = preloaded_environment(os.environ)
    if environ is not None:
        os.execve(argv[0], argv, environ)
