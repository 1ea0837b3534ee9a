/* Frames that wait on a worker thread through a condition variable: each frame hands the worker 8 ms of work and
 * waits in pthread_cond_wait for its answer, runs 1 ms of its own and ends at glFinish (a surfaceless EGL
 * context). */
#include <pthread.h>
#include "../common/gl_context.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int asked, answered;

static void *worker(void *unused) {
    (void)unused;
    for (;;) {
        pthread_mutex_lock(&lock);
        while (asked == answered) pthread_cond_wait(&changed, &lock);
        pthread_mutex_unlock(&lock);
        work_ms(8.0);
        pthread_mutex_lock(&lock);
        answered++;
        pthread_cond_broadcast(&changed);
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int frames = frames_of(argc, argv, 250);
    gl_open(16, 16, 3, 0);
    pthread_t thread;
    pthread_create(&thread, NULL, worker, NULL);
    for (int frame = 0; frame < frames; frame++) {
        pthread_mutex_lock(&lock);
        asked++;
        pthread_cond_broadcast(&changed);
        while (answered < asked) pthread_cond_wait(&changed, &lock);
        pthread_mutex_unlock(&lock);
        work_ms(1.0);
        glClear(GL_COLOR_BUFFER_BIT);
        glFinish();
    }
    printf("%d frames\n", frames);
    return 0;
}
