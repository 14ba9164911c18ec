/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * marker-misuse: wrong uses of the marker API, one per mode, for test_marker.py. Prints each
 * call's return value as "NAME=ERRNO-NAME" so the test can check what the program was told.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <pmugate/marker.h>

static void show(const char *what, int r) {
        printf("%s=%s\n", what, r == 0 ? "0" : strerrorname_np(-r));
        fflush(stdout);
}

static int run_on(int cpu) {
        cpu_set_t set;

        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        return sched_setaffinity(0, sizeof(set), &set) < 0 ? -errno : 0;
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int stage;

static void wait_stage(int s) {
        pthread_mutex_lock(&lock);
        while (stage < s)
                pthread_cond_wait(&cond, &lock);
        pthread_mutex_unlock(&lock);
}

static void set_stage(int s) {
        pthread_mutex_lock(&lock);
        stage = s;
        pthread_cond_broadcast(&cond);
        pthread_mutex_unlock(&lock);
}

static void *other_thread(void *arg) {
        (void) arg;
        show("thread-start", pmugate_marker_start("shared"));
        set_stage(1);
        wait_stage(2);
        show("thread-stop", pmugate_marker_stop("shared"));
        return NULL;
}

int main(int argc, char *argv[]) {
        const char *mode = argc > 1 ? argv[1] : "";
        pthread_t t;
        char name[32];

        show("init", pmugate_marker_init(0));
        if (strcmp(mode, "stop-without-start") == 0)
                show("stop", pmugate_marker_stop("never"));
        else if (strcmp(mode, "nesting") == 0) {
                show("start-outer", pmugate_marker_start("outer"));
                show("start-inner", pmugate_marker_start("inner"));
                show("stop-outer", pmugate_marker_stop("outer"));
        } else if (strcmp(mode, "overlap") == 0) {
                show("register", pmugate_marker_register("inner", PMUGATE_REGION_NESTED));
                show("start-outer", pmugate_marker_start("outer"));
                show("start-inner", pmugate_marker_start("inner"));
                show("stop-outer", pmugate_marker_stop("outer"));
                show("stop-inner", pmugate_marker_stop("inner"));
                show("stop-outer-again", pmugate_marker_stop("outer"));
        } else if (strcmp(mode, "other-thread") == 0) {
                pthread_create(&t, NULL, other_thread, NULL);
                wait_stage(1);
                show("main-stop", pmugate_marker_stop("shared"));
                set_stage(2);
                pthread_join(t, NULL);
        } else if (strcmp(mode, "too-many") == 0) {
                int r = 0, i;

                for (i = 0; i < 2000 && r == 0; i++) {
                        snprintf(name, sizeof(name), "region%d", i);
                        r = pmugate_marker_register(name, 0);
                }
                printf("registered=%d\n", i - 1);
                show("register", r);
        } else if (strcmp(mode, "bad-name") == 0)
                show("start", pmugate_marker_start("two words"));
        else if (strcmp(mode, "twice") == 0) {
                show("start", pmugate_marker_start("a"));
                show("start-again", pmugate_marker_start("a"));
                show("stop", pmugate_marker_stop("a"));
        } else if (strcmp(mode, "killed") == 0) {
                show("start", pmugate_marker_start("doomed"));
                raise(SIGKILL);
        } else if (strcmp(mode, "hang") == 0) {
                show("start", pmugate_marker_start("forever"));
                pause();
        } else if (strcmp(mode, "migrate") == 0) {
                /* one call that moves from CPU 0 to CPU 1 inside the region, one that stays */
                show("pin-0", run_on(0));
                show("start", pmugate_marker_start("moving"));
                show("pin-1", run_on(1));
                usleep(40000);
                show("stop", pmugate_marker_stop("moving"));
                show("start-again", pmugate_marker_start("moving"));
                usleep(5000);
                show("stop-again", pmugate_marker_stop("moving"));
        } else if (strcmp(mode, "fine") == 0) {
                show("start", pmugate_marker_start("fine"));
                usleep(50000);
                show("stop", pmugate_marker_stop("fine"));
        } else {
                fprintf(stderr, "usage: marker-misuse MODE\n");
                return 2;
        }
        printf("reason=%s\nmode=%s\n", pmugate_marker_last_reason(), pmugate_marker_read_mode());
        show("close", pmugate_marker_close());
        return 0;
}
