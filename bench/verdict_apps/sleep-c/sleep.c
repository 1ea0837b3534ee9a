/* Frames that sleep: 1 ms of work, then usleep for 8 ms, ending at glFinish (a surfaceless EGL context). */
#include <unistd.h>
#include "../common/gl_context.h"

int main(int argc, char **argv) {
    int frames = frames_of(argc, argv, 250);
    gl_open(16, 16, 3, 0);
    for (int frame = 0; frame < frames; frame++) {
        work_ms(1.0);
        usleep(8000);
        glClear(GL_COLOR_BUFFER_BIT);
        glFinish();
    }
    printf("%d frames\n", frames);
    return 0;
}
