/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The wrapped command: fork, hold, pin, exec and reap
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/workload.h"

/* Why the child could not run the command, sent through a close-on-exec pipe. */
typedef struct ExecFailure {
        int stage;                      /* 0: pinning to the CPUs, 1: exec */
        int error;
} ExecFailure;

int workload_fork(Workload *w, char **command, const uint32_t *pin, size_t n_pin) {
        int go[2], failure[2];

        *w = (Workload) { .pid = -1, .pidfd = -1, .go_fd = -1, .failure_fd = -1, .status = -1 };
        if (pipe2(go, O_CLOEXEC) < 0)
                return -errno;
        if (pipe2(failure, O_CLOEXEC) < 0) {
                int r = -errno;

                (void) close(go[0]);
                (void) close(go[1]);
                return r;
        }
        w->pid = fork();
        if (w->pid < 0) {
                int r = -errno;

                (void) close(go[0]);
                (void) close(go[1]);
                (void) close(failure[0]);
                (void) close(failure[1]);
                return r;
        }
        if (w->pid == 0) {
                ExecFailure f = { .stage = 0 };
                sigset_t none;
                char byte;

                (void) sigemptyset(&none);
                (void) sigprocmask(SIG_SETMASK, &none, NULL);
                (void) close(go[1]);
                (void) close(failure[0]);
                /* wait until the counters run, so that the command is measured from its start */
                if (read(go[0], &byte, 1) != 0)
                        _exit(EXIT_CANNOT_EXECUTE);
                if (n_pin > 0) {
                        cpu_set_t set;

                        CPU_ZERO(&set);
                        for (size_t i = 0; i < n_pin; i++)
                                if (pin[i] < CPU_SETSIZE)
                                        CPU_SET(pin[i], &set);
                        if (sched_setaffinity(0, sizeof(set), &set) < 0) {
                                f.error = errno;
                                (void) !write(failure[1], &f, sizeof(f));
                                _exit(EXIT_CANNOT_EXECUTE);
                        }
                }
                execvp(command[0], command);
                f = (ExecFailure) { .stage = 1, .error = errno };
                (void) !write(failure[1], &f, sizeof(f));
                _exit(errno == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXECUTE);
        }
        (void) close(go[0]);
        (void) close(failure[1]);
        w->go_fd = go[1];
        w->failure_fd = failure[0];
        w->pidfd = pidfd_open(w->pid, 0);
        return w->pidfd < 0 ? -errno : 0;
}

static int exit_status_of(int wstatus) {
        if (WIFEXITED(wstatus))
                return WEXITSTATUS(wstatus);
        if (WIFSIGNALED(wstatus))
                return EXIT_SIGNAL_BASE + WTERMSIG(wstatus);
        return 1;
}

void workload_reap(Workload *w) {
        int wstatus;

        if (w->pid <= 0 || w->status >= 0)
                return;
        while (waitpid(w->pid, &wstatus, 0) < 0)
                if (errno != EINTR)
                        return;
        w->status = exit_status_of(wstatus);
}

int workload_release(Workload *w, char **command, const char *verb) {
        ExecFailure f;
        ssize_t n;

        (void) close(w->go_fd);
        w->go_fd = -1;
        n = read(w->failure_fd, &f, sizeof(f));
        (void) close(w->failure_fd);
        w->failure_fd = -1;
        if (n != (ssize_t) sizeof(f))
                return 0;
        fprintf(stderr, "pmugate: %s: cannot %s '%s': %s\n", verb, f.stage == 0 ? "pin to the CPUs" : "run",
                command[0], strerror(f.error));
        workload_reap(w);
        return -f.error;
}

void workload_abort(Workload *w) {
        if (w->pid > 0 && w->status < 0) {
                (void) kill(w->pid, SIGKILL);
                workload_reap(w);
        }
        if (w->go_fd >= 0)
                (void) close(w->go_fd);
        if (w->failure_fd >= 0)
                (void) close(w->failure_fd);
        if (w->pidfd >= 0)
                (void) close(w->pidfd);
}
