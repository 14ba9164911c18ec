/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The ring reader against this machine's real kernel (the reader half of pmugate timing's
 * first test; the daemon's fd handover is the integration test's): the one IP-mode attr
 * (timing_attr_fill) opened with perf_event_open on a forked child, one event per CPU,
 * enabled at the child's exec of a program the suite builds (timing/hot.c); the rings are
 * drained until it exits, and its samples named through libdwfl from its own MMAP2 records:
 * most of them in its hot function, and the mapping records name the program.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "macro.h"
#include "timing-attr.h"
#include "timing/timing-ring.h"
#include "timing/timing-symbols.h"

/* cpu-clock nanoseconds between samples: 10 kHz, below the kernel's default rate limit */
#define PERIOD_NS 100000U
#define CPUS_MAX 256U

typedef struct Run {
        pid_t child;
        char program[PATH_MAX];
        TimingSymbols *symbols;
        size_t samples, samples_hot, samples_named, mappings_of_program, lost, exec_comms;
        uint64_t sample_ips[1 << 16];
        pid_t sample_pids[1 << 16];
        size_t n_ips;
        /* the child and what it forked (inherit follows them; a sanitizer's helper tasks too) */
        pid_t family[64];
        size_t n_family;
} Run;

static int on_record(const TimingRecord *rec, void *userdata) {
        Run *run = userdata;

        switch (rec->kind) {
        case TIMING_RECORD_MAPPING:
                if ((pid_t) rec->mapping.pid != run->child)
                        break;
                if (strcmp(rec->mapping.path, run->program) == 0)
                        run->mappings_of_program++;
                return timing_symbols_add_mapping(run->symbols, &rec->mapping) < 0 ? -ENOMEM : 0;
        case TIMING_RECORD_SAMPLE:
                /* named after the drain: a sample may come before its mapping, or its task's
                 * fork record, in another CPU's ring */
                if (run->n_ips < ELEMENTSOF(run->sample_ips)) {
                        run->sample_pids[run->n_ips] = (pid_t) rec->pid;
                        run->sample_ips[run->n_ips++] = rec->sample.ip;
                }
                run->samples++;
                break;
        case TIMING_RECORD_FORK:
                if (rec->pid != rec->task.ppid && run->n_family < ELEMENTSOF(run->family))
                        run->family[run->n_family++] = (pid_t) rec->pid;
                break;
        case TIMING_RECORD_COMM:
                /* the exec that enabled the events: the program's name, flagged as an exec */
                if ((pid_t) rec->pid == run->child && (rec->misc & PERF_RECORD_MISC_COMM_EXEC) &&
                    strcmp(rec->comm, "timing-hot") == 0)
                        run->exec_comms++;
                break;
        case TIMING_RECORD_LOST:
                run->lost += rec->lost;
                break;
        default:
                break;
        }
        return 0;
}

static int drain_all(TimingRing **rings, size_t n, Run *run) {
        for (size_t i = 0; i < n; i++) {
                uint64_t malformed = 0;
                int r = timing_ring_drain(rings[i], on_record, run, &malformed);

                assert_true(r >= 0);
                /* the kernel writes no record this reader cannot decode */
                assert_int_equal(malformed, 0);
        }
        return 0;
}

static void test_kernel_samples(void **state) {
        static Run run;
        struct perf_event_attr attr;
        TimingRing *rings[CPUS_MAX];
        int fds[CPUS_MAX], go[2], status;
        size_t n = 0;
        long n_cpus = sysconf(_SC_NPROCESSORS_CONF);
        const char *program = getenv("TIMING_HOT_PROGRAM");
        struct timespec tick = { .tv_nsec = 10 * 1000 * 1000 };
        pid_t child;
        char go_byte = 'x';

        (void) state;
        assert_non_null(program);
        assert_non_null(realpath(program, run.program));
        assert_int_equal(pipe2(go, O_CLOEXEC), 0);
        child = fork();
        assert_true(child >= 0);
        if (child == 0) {
                char c;

                (void) close(go[1]);
                if (read(go[0], &c, 1) != 1)
                        _exit(127);
                execl(run.program, run.program, "400", (char *) NULL);
                _exit(127);
        }
        (void) close(go[0]);
        run.child = child;
        assert_int_equal(timing_symbols_new(&run.symbols), 0);

        timing_attr_fill(&attr, TIMING_MODE_IPS, PERIOD_NS, /* on_exec= */ true);
        for (long cpu = 0; cpu < n_cpus && n < CPUS_MAX; cpu++) {
                int fd = (int) syscall(SYS_perf_event_open, &attr, child, (int) cpu, /* group_fd= */ -1,
                                       PERF_FLAG_FD_CLOEXEC);

                if (fd < 0 && (errno == ENODEV || errno == EINVAL))
                        continue;               /* an offline CPU */
                if (fd < 0 && (errno == EACCES || errno == EPERM || errno == ENOSYS || errno == ENOENT)) {
                        (void) kill(child, SIGKILL);
                        (void) waitpid(child, NULL, 0);
                        skip();
                }
                assert_true(fd >= 0);
                fds[n] = fd;
                assert_int_equal(timing_ring_map(fd, TIMING_SAMPLE_TYPE_IPS, &rings[n]), 0);
                n++;
        }
        assert_true(n > 0);

        assert_int_equal(write(go[1], &go_byte, 1), 1);
        (void) close(go[1]);
        for (;;) {
                pid_t w = waitpid(child, &status, WNOHANG);

                assert_true(w >= 0);
                drain_all(rings, n, &run);
                if (w == child)
                        break;
                (void) nanosleep(&tick, NULL);
        }
        drain_all(rings, n, &run);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);

        for (size_t i = 0; i < run.n_ips; i++) {
                TimingSymbol sym;
                bool ours = run.sample_pids[i] == child;

                /* every sample is of the child or a process it forked: no other process's */
                for (size_t k = 0; k < run.n_family && !ours; k++)
                        ours = run.sample_pids[i] == run.family[k];
                assert_true(ours);
                if (run.sample_pids[i] != child)
                        continue;

                assert_int_equal(timing_symbols_lookup(run.symbols, run.sample_ips[i], &sym), 0);
                if (sym.function)
                        run.samples_named++;
                if (sym.function && strcmp(sym.function, "timing_hot_spin") == 0 && sym.module &&
                    strcmp(sym.module, run.program) == 0)
                        run.samples_hot++;
        }
        print_message("%zu samples on %zu CPUs, %zu named, %zu in timing_hot_spin, %zu lost, "
                      "%zu mapping records of the program, %zu processes forked\n",
                      run.samples, n, run.samples_named, run.samples_hot, run.lost, run.mappings_of_program,
                      run.n_family);

        assert_true(run.mappings_of_program >= 1);
        assert_int_equal(run.exec_comms, 1);
        /* 400 ms of spinning at 10 kHz: thousands on an idle machine; on a busy one at least
         * enough to judge the share */
        assert_true(run.samples >= 100);
        assert_true(run.samples_hot * 100 >= run.samples * 80);

        for (size_t i = 0; i < n; i++) {
                rings[i] = timing_ring_unmap(rings[i]);
                assert_int_equal(close(fds[i]), 0);
        }
        run.symbols = timing_symbols_free(run.symbols);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_kernel_samples),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
