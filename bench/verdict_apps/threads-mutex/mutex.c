/* Frames that wait for a mutex a worker thread holds most of the time: the worker computes 6 ms with the mutex
 * held and 0.5 ms without; each frame takes the mutex (waiting in pthread_mutex_lock), runs 0.5 ms with it, and
 * ends at glFinish (a surfaceless EGL context). */
#include <pthread.h>
#include "../common/gl_context.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *unused) {
    (void)unused;
    for (;;) {
        pthread_mutex_lock(&lock);
        work_ms(6.0);
        pthread_mutex_unlock(&lock);
        work_ms(0.5);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int frames = frames_of(argc, argv, 400);
    gl_open(16, 16, 3, 0);
    pthread_t thread;
    pthread_create(&thread, NULL, worker, NULL);
    for (int frame = 0; frame < frames; frame++) {
        pthread_mutex_lock(&lock);
        work_ms(0.5);
        pthread_mutex_unlock(&lock);
        glClear(GL_COLOR_BUFFER_BIT);
        glFinish();
    }
    printf("%d frames\n", frames);
    return 0;
}
