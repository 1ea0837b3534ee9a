/* A GL app whose frames are the CPU's: 10 ms of the app's own arithmetic, then one small clear and a swap on a
 * surfaceless EGL pbuffer. */
#include "../common/gl_context.h"

int main(int argc, char **argv) {
    int frames = frames_of(argc, argv, 200);
    gl_open(64, 64, 3, 0);
    for (int frame = 0; frame < frames; frame++) {
        work_ms(10.0);
        glClearColor((float)(frame % 7) / 7.0f, 0.2f, 0.3f, 1.0f);
        glClear(GL_COLOR_BUFFER_BIT);
        eglSwapBuffers(gl_display, gl_surface);
    }
    printf("%d frames\n", frames);
    return 0;
}
