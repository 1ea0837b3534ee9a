/* Frames that wait on the X server: each frame asks the server to fill 40 large arcs into a pixmap and waits for
 * it with XSync (poll and recvmsg inside libX11, off a CPU while the server draws), then clears and swaps a small
 * GLES context on the same display. Needs a display (Xvfb will do). */
#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <GLES2/gl2.h>
#include <X11/Xlib.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int frames = argc > 1 ? atoi(argv[1]) : 400;
    int arcs = argc > 2 ? atoi(argv[2]) : 40;
    Display *x = XOpenDisplay(NULL);
    if (!x) { fprintf(stderr, "no X display (DISPLAY is unset or unreachable)\n"); return 1; }
    Window window = XCreateSimpleWindow(x, DefaultRootWindow(x), 0, 0, 64, 64, 0, 0, 0);
    XMapWindow(x, window);
    Pixmap pixmap = XCreatePixmap(x, window, 1024, 1024, DefaultDepth(x, DefaultScreen(x)));
    GC gc = XCreateGC(x, pixmap, 0, NULL);
    EGLDisplay display = eglGetPlatformDisplay(EGL_PLATFORM_X11_KHR, x, NULL);
    if (display == EGL_NO_DISPLAY || !eglInitialize(display, NULL, NULL)) { fprintf(stderr, "no EGL\n"); return 1; }
    eglBindAPI(EGL_OPENGL_ES_API);
    const EGLint config_attribs[] = {EGL_SURFACE_TYPE, EGL_WINDOW_BIT, EGL_RENDERABLE_TYPE, EGL_OPENGL_ES2_BIT,
                                     EGL_RED_SIZE, 8, EGL_GREEN_SIZE, 8, EGL_BLUE_SIZE, 8, EGL_NONE};
    EGLConfig config;
    EGLint count = 0;
    if (!eglChooseConfig(display, config_attribs, &config, 1, &count) || count < 1) return 1;
    EGLSurface surface = eglCreatePlatformWindowSurface(display, config, &window, NULL);
    const EGLint context_attribs[] = {EGL_CONTEXT_CLIENT_VERSION, 2, EGL_NONE};
    EGLContext context = eglCreateContext(display, config, EGL_NO_CONTEXT, context_attribs);
    if (surface == EGL_NO_SURFACE || !eglMakeCurrent(display, surface, surface, context)) return 1;
    printf("GL_RENDERER = %s\n", (const char *)glGetString(GL_RENDERER));
    fflush(stdout);
    for (int frame = 0; frame < frames; frame++) {
        for (int i = 0; i < arcs; i++) {
            XSetForeground(x, gc, (unsigned long)(frame * 7919 + i * 104729));
            XFillArc(x, pixmap, gc, (i * 37) % 200, (i * 53) % 200, 800, 800, 0, 360 * 64);
        }
        XSync(x, False);
        glClearColor((float)(frame % 5) / 5.0f, 0.3f, 0.6f, 1.0f);
        glClear(GL_COLOR_BUFFER_BIT);
        eglSwapBuffers(display, surface);
    }
    printf("%d frames\n", frames);
    return 0;
}
