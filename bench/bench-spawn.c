/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-spawn: wall time of running a command to its end, as a Slurm Prolog runs pmugatectl
 *
 * Usage: bench-spawn RUNS COMMAND [ARG...]
 * Runs COMMAND RUNS times with posix_spawn() (vfork: the spawner's own size does not count),
 * waits for each, and prints one line per run: the wall time and the CPU time (user + system,
 * from wait4()) in milliseconds. The CPU time hardly depends on what else the machine runs.
 * A run that fails ends the benchmark with its exit status. "%d" in an argument becomes the
 * run's number, so that each grant can name a new job. bench/bench-ctl.py drives it.
 */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>



extern char **environ;

#define ARG_MAX_LEN 256
#define ARGS_MAX 32

static double now_ms(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec * 1e3 + (double) ts.tv_nsec / 1e6;
}

static double timeval_ms(struct timeval tv) {
        return (double) tv.tv_sec * 1e3 + (double) tv.tv_usec / 1e3;
}

static int run_once(char **argv_template, int argc, int run, const posix_spawn_file_actions_t *actions,
                    double *ret_ms, double *ret_cpu_ms) {
        struct rusage ru;
        static char bufs[ARGS_MAX][ARG_MAX_LEN];
        char *argv[ARGS_MAX + 1];
        double start;
        pid_t pid;
        int status, r;

        if (argc > ARGS_MAX)
                return -E2BIG;

        for (int i = 0; i < argc; i++) {
                const char *mark = strstr(argv_template[i], "%d");

                if (mark) {
                        int prefix = (int) (mark - argv_template[i]);
                        int k = snprintf(bufs[i], sizeof(bufs[i]), "%.*s%d%s", prefix, argv_template[i], run,
                                         mark + 2);
                        if (k < 0 || k >= (int) sizeof(bufs[i]))
                                return -E2BIG;
                        argv[i] = bufs[i];
                } else
                        argv[i] = argv_template[i];
        }
        argv[argc] = NULL;

        start = now_ms();
        r = posix_spawn(&pid, argv[0], actions, NULL, argv, environ);
        if (r != 0)
                return -r;
        if (wait4(pid, &status, 0, &ru) < 0)
                return -errno;
        *ret_ms = now_ms() - start;
        *ret_cpu_ms = timeval_ms(ru.ru_utime) + timeval_ms(ru.ru_stime);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "bench-spawn: %s exited with status 0x%x\n", argv[0], (unsigned) status);
                return -ECHILD;
        }
        return 0;
}

int main(int argc, char *argv[]) {
        posix_spawn_file_actions_t actions;
        long runs;

        if (argc < 3 || (runs = strtol(argv[1], NULL, 10)) <= 0 || runs > 1000000) {
                fprintf(stderr, "Usage: bench-spawn RUNS COMMAND [ARG...]\n");
                return 2;
        }
        /* The command's output would mix with the numbers. */
        if (posix_spawn_file_actions_init(&actions) != 0 ||
            posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0) != 0) {
                fprintf(stderr, "bench-spawn: out of memory\n");
                return 1;
        }
        for (long i = 0; i < runs; i++) {
                double ms = 0, cpu_ms = 0;
                int r = run_once(argv + 2, argc - 2, (int) i, &actions, &ms, &cpu_ms);

                if (r < 0) {
                        fprintf(stderr, "bench-spawn: run %ld: %s\n", i, strerror(-r));
                        return 1;
                }
                printf("%.4f %.4f\n", ms, cpu_ms);
        }
        return 0;
}
