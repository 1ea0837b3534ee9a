/* A GLES 3.1 context on Mesa's surfaceless EGL platform (no display server), drawing into a pbuffer, and the
 * helpers the benchmark's C apps share: an amount of CPU time, and the frame count. */
#ifndef VERDICT_GL_CONTEXT_H
#define VERDICT_GL_CONTEXT_H
#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <GLES3/gl31.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static EGLDisplay gl_display;
static EGLSurface gl_surface;

static inline void gl_fail(const char *what) {
    fprintf(stderr, "%s failed (EGL error 0x%x)\n", what, (unsigned)eglGetError());
    exit(1);
}

/* A context of the given version drawing into a width x height pbuffer; prints GL_RENDERER as es2gears does. */
static inline void gl_open(int width, int height, int major, int minor) {
    gl_display = eglGetPlatformDisplay(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, NULL);
    if (gl_display == EGL_NO_DISPLAY || !eglInitialize(gl_display, NULL, NULL)) gl_fail("eglInitialize");
    eglBindAPI(EGL_OPENGL_ES_API);
    const EGLint config_attribs[] = {EGL_SURFACE_TYPE, EGL_PBUFFER_BIT, EGL_RENDERABLE_TYPE, EGL_OPENGL_ES3_BIT,
                                     EGL_RED_SIZE, 8, EGL_GREEN_SIZE, 8, EGL_BLUE_SIZE, 8, EGL_NONE};
    EGLConfig config;
    EGLint count = 0;
    if (!eglChooseConfig(gl_display, config_attribs, &config, 1, &count) || count < 1) gl_fail("eglChooseConfig");
    const EGLint surface_attribs[] = {EGL_WIDTH, width, EGL_HEIGHT, height, EGL_NONE};
    gl_surface = eglCreatePbufferSurface(gl_display, config, surface_attribs);
    if (gl_surface == EGL_NO_SURFACE) gl_fail("eglCreatePbufferSurface");
    const EGLint context_attribs[] = {EGL_CONTEXT_MAJOR_VERSION, major, EGL_CONTEXT_MINOR_VERSION, minor, EGL_NONE};
    EGLContext context = eglCreateContext(gl_display, config, EGL_NO_CONTEXT, context_attribs);
    if (context == EGL_NO_CONTEXT || !eglMakeCurrent(gl_display, gl_surface, gl_surface, context))
        gl_fail("eglMakeCurrent");
    printf("GL_RENDERER = %s\n", (const char *)glGetString(GL_RENDERER));
    fflush(stdout);
}

static inline double thread_cpu_ms(void) {
    struct timespec now;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return now.tv_sec * 1e3 + now.tv_nsec / 1e6;
}

static volatile unsigned long long cpu_sink;

/* Busy on a CPU for ms of this thread's own CPU time (its clock, not the wall's): the same work on a busy machine,
 * where the wall time it takes grows by the time the thread waits for a CPU. */
static inline void work_ms(double ms) {
    double end = thread_cpu_ms() + ms;
    unsigned long long x = cpu_sink;
    while (thread_cpu_ms() < end)
        for (int i = 0; i < 2000; i++) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    cpu_sink = x;
}

static inline int frames_of(int argc, char **argv, int otherwise) { return argc > 1 ? atoi(argv[1]) : otherwise; }

#endif
