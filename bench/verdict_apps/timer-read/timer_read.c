/* Frames paced by a read the app controls the wait of: a timerfd that fires every 10 ms, read (blocking) once a
 * frame after 1 ms of work; each frame ends at glFinish (a surfaceless EGL context). */
#include <stdint.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include "../common/gl_context.h"

int main(int argc, char **argv) {
    int frames = frames_of(argc, argv, 250);
    gl_open(16, 16, 3, 0);
    int timer = timerfd_create(CLOCK_MONOTONIC, 0);
    struct itimerspec every = {{0, 10000000}, {0, 10000000}};
    if (timer < 0 || timerfd_settime(timer, 0, &every, NULL) < 0) { perror("timerfd"); return 1; }
    for (int frame = 0; frame < frames; frame++) {
        work_ms(1.0);
        uint64_t expired;
        if (read(timer, &expired, sizeof expired) != sizeof expired) { perror("read"); return 1; }
        glClear(GL_COLOR_BUFFER_BIT);
        glFinish();
    }
    printf("%d frames\n", frames);
    return 0;
}
