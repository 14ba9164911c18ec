/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The simulator's perf driver (backend/sim/sim-perf.c) against the simulator's own MSR path:
 * the same counts for the same profile and simulated time, TopDown metric events from
 * PERF_METRICS, the kernel's multiplexing and its time_enabled/time_running, groups that never
 * fit, software events through the real kernel, task and real-cgroup events (two cgroups
 * sharing a CPU each see their own run time), hostile handles, and the IMC uncore PMU
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend/perf-catalog.h"
#include "backend/sim/sim-perf.h"
#include "backend/sim/sim-profile.h"
#include "backend/sim/sim-regs.h"
#include "macro.h"
#include "sim_test_util.h"

#define WINDOW_CYCLES UINT64_C(4000000000)
#define MUX_SLICES 300U
#define READ_GROUP_FORMAT                                                                       \
        (PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING |         \
         PERF_FORMAT_ID)

/* ---- Helpers */

typedef struct Fixture {
        SimTest t;
        PerfDriver *d;
} Fixture;

static Fixture fixture_new(const char *model, const char *config) {
        Fixture f = { .t = sim_test_new(model, config) };

        assert_int_equal(sim_perf_driver_new(f.t.backend, sim_test_kernel_driver(), &f.d), 0);
        return f;
}

static void fixture_free(Fixture *f) {
        f->d->vtable->free(f->d);
        sim_test_free(&f->t);
}

static int open_event(Fixture *f, uint32_t type, uint64_t config, int cpu, int group) {
        struct perf_event_attr a = {
                .type = type,
                .size = sizeof(a),
                .config = config,
                .read_format = READ_GROUP_FORMAT,
                /* uncore PMUs refuse every exclusion, as the kernel's do (PERF_PMU_CAP_NO_EXCLUDE) */
                .exclude_hv = type < 32,
        };

        return perf_driver_open(f->d, &a, -1, -1, cpu, group, 0);
}

typedef struct GroupRead {
        uint64_t nr, enabled, running;
        struct {
                uint64_t value, id;
        } v[16];
} GroupRead;

static GroupRead read_group(Fixture *f, int handle) {
        GroupRead g = {};
        ssize_t n = perf_driver_read(f->d, handle, &g, sizeof(g));

        assert_true(n >= (ssize_t) (3 * sizeof(uint64_t)));
        assert_int_equal((size_t) n, 3 * sizeof(uint64_t) + g.nr * 2 * sizeof(uint64_t));
        return g;
}

static const char *const all_models[] = { "skx", "clx", "icx", "spr", "zen4", "zen5" };

static bool is_amd(const char *model) {
        return strncmp(model, "zen", 3) == 0;
}

/* The MSR path's instructions and cycles on cpu over cycles, programmed by hand on GP
 * counters 1 and 2 (clear of the AMD NMI watchdog's counter 0). */
static void msr_path_counts(const char *model, const char *config, uint32_t cpu, uint64_t cycles,
                            uint64_t *ret_inst, uint64_t *ret_clk) {
        SimTest t = sim_test_new(model, config);
        bool amd = is_amd(model);
        uint64_t evt[2] = { 0xc0, amd ? 0x76 : 0x3c };
        uint32_t global = amd ? MSR_AMD_GLOBAL_CTL : MSR_IA32_PERF_GLOBAL_CTRL;

        for (unsigned i = 0; i < 2; i++) {
                uint32_t ctl = amd ? MSR_AMD_PERF_CTL0 + 2 * (i + 1) : MSR_IA32_PERFEVTSEL0 + i + 1;

                sim_wr(&t, cpu, ctl + (amd ? 1 : 0), 0);
                if (!amd)
                        sim_wr(&t, cpu, MSR_IA32_PMC0 + i + 1, 0);
                sim_wr(&t, cpu, ctl, evt[i] | EVTSEL_EN | EVTSEL_USR | EVTSEL_OS);
        }
        sim_wr(&t, cpu, global, sim_rd(&t, cpu, global) | 0x6);
        sim_advance(&t, cycles);
        *ret_inst = sim_rd(&t, cpu, amd ? MSR_AMD_PERF_CTL0 + 3 : MSR_IA32_PMC0 + 1);
        *ret_clk = sim_rd(&t, cpu, amd ? MSR_AMD_PERF_CTL0 + 5 : MSR_IA32_PMC0 + 2);
        sim_test_free(&t);
}

static void assert_close(double got, double want, double rel, double abs_bound, const char *what) {
        if (fabs(got - want) > abs_bound + rel * fabs(want)) {
                print_error("%s: got %.6g, want %.6g\n", what, got, want);
                fail();
        }
}

/* ---- Tests */

static void test_group_like_msr_path(void **state) {
        static const char config[] = "[machine]\nsockets = 1\ncores = 4\nsmt = yes\n"
                                     "[clock]\nmode = deterministic\ncycles_per_access = 0\n"
                                     "[cpus 0-7]\nprofile = compute\n[inject]\nnmi_watchdog = yes\n";
        (void) state;

        for (size_t k = 0; k < ELEMENTSOF(all_models); k++) {
                Fixture f = fixture_new(all_models[k], config);
                uint64_t inst, clk;
                int leader, member;
                GroupRead g;

                leader = open_event(&f, PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, 2, -1);
                assert_true(leader >= SIM_PERF_HANDLE_BASE);
                member = open_event(&f, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 2, leader);
                assert_true(member >= SIM_PERF_HANDLE_BASE);
                sim_advance(&f.t, WINDOW_CYCLES);
                g = read_group(&f, leader);

                msr_path_counts(all_models[k], config, 2, WINDOW_CYCLES, &inst, &clk);
                print_message("%s: perf inst %" PRIu64 " cycles %" PRIu64 ", msr inst %" PRIu64
                              " cycles %" PRIu64 "\n",
                              all_models[k], g.v[0].value, g.v[1].value, inst, clk);
                assert_int_equal(g.nr, 2);
                assert_int_equal(g.v[0].id, (uint64_t) leader);
                assert_int_equal(g.v[1].id, (uint64_t) member);
                assert_true(inst > 0 && clk > 0);
                assert_close((double) g.v[0].value, (double) inst, 1e-9, 2, "instructions");
                assert_close((double) g.v[1].value, (double) clk, 1e-9, 2, "cycles");
                assert_int_equal(g.enabled, g.running);
                assert_close((double) g.enabled, WINDOW_CYCLES * 1e3 / f.t.machine->cpu_model->nominal_mhz,
                             0, 1, "time_enabled");

                perf_driver_close(f.d, member);
                perf_driver_close(f.d, leader);
                fixture_free(&f);
        }
}

static void check_topdown(const char *model, unsigned levels) {
        static const char config[] = "[machine]\nsockets = 1\ncores = 4\nsmt = no\n"
                                     "[clock]\nmode = deterministic\ncycles_per_access = 0\n"
                                     "[cpus 0-3]\nprofile = frontend-bound\n";
        const SimProfile *p = sim_profile_builtin("frontend-bound");
        Fixture f = fixture_new(model, config);
        double want[8], got;
        int slots, h;
        GroupRead g;

        assert_non_null(p);
        want[0] = p->retiring;
        want[1] = p->bad_speculation;
        want[2] = p->frontend_bound;
        want[3] = p->backend_bound;
        want[4] = p->heavy_operations;
        want[5] = p->branch_mispredicts;
        want[6] = p->fetch_latency;
        want[7] = p->memory_bound;

        slots = open_event(&f, PERF_TYPE_RAW, 0x0400, 1, -1);
        assert_true(slots >= SIM_PERF_HANDLE_BASE);
        for (unsigned i = 0; i < 4 * levels; i++) {
                h = open_event(&f, PERF_TYPE_RAW, 0x8000 + 0x100 * i, 1, slots);
                assert_true(h >= SIM_PERF_HANDLE_BASE);
        }
        /* level 2 on a level-1 part, and a metric event outside a SLOTS group, are refused */
        if (levels == 1)
                assert_int_equal(open_event(&f, PERF_TYPE_RAW, 0x8400, 1, slots), -EINVAL);
        assert_int_equal(open_event(&f, PERF_TYPE_RAW, 0x8000, 1, -1), -EINVAL);

        for (int round = 0; round < 3; round++) {
                sim_advance(&f.t, WINDOW_CYCLES);
                g = read_group(&f, slots);
                assert_int_equal(g.nr, 1 + 4 * levels);
                assert_true(g.v[0].value > 0);
                for (unsigned i = 0; i < 4 * levels; i++) {
                        got = (double) g.v[1 + i].value / (double) g.v[0].value;
                        print_message("%s topdown %u: %.4f (profile %.4f)\n", model, i, got, want[i]);
                        assert_close(got, want[i], 0, 1e-2, "topdown fraction");
                }
        }
        fixture_free(&f);
}

static void test_topdown_icx(void **state) {
        (void) state;
        check_topdown("icx", 1);
}

static void test_topdown_spr(void **state) {
        (void) state;
        check_topdown("spr", 2);
}

static void test_no_topdown_elsewhere(void **state) {
        (void) state;
        for (size_t k = 0; k < ELEMENTSOF(all_models); k++) {
                Fixture f = fixture_new(all_models[k], NULL);

                if (strcmp(all_models[k], "skx") == 0 || strcmp(all_models[k], "clx") == 0)
                        assert_true(open_event(&f, PERF_TYPE_RAW, 0x0400, 0, -1) < 0);
                /* USR/OS/INT/EN/ANY/PC are the driver's, not the config's */
                assert_int_equal(open_event(&f, PERF_TYPE_RAW, 0x4300c0, 0, -1), -EINVAL);
                assert_int_equal(open_event(&f, PERF_TYPE_HARDWARE, PERF_COUNT_HW_MAX, 0, -1), -EINVAL);
                fixture_free(&f);
        }
}

/* Twelve GP-only Skylake events, three groups of four, on the four GP counters of an SMT
 * thread. */
static const uint64_t mux_events[12] = {
        0x10e, 0x2c2, 0x4c2, 0x19c, 0x10d, 0xc5, 0x2a6, 0x4a6, 0x40a6, 0x13c, 0x23c, 0x40004a3,
};
static const char mux_config[] = "[machine]\nsockets = 1\ncores = 4\nsmt = yes\n"
                                 "[clock]\nmode = deterministic\ncycles_per_access = 0\n"
                                 "[cpus 0-7]\nprofile = default\n";

static void test_multiplexing(void **state) {
        Fixture f = fixture_new("skx", mux_config);
        uint64_t slice = (uint64_t) (sim_test_hz(&f.t) * 4e-3);
        SimSample truth;
        uint32_t cpu = 3;
        int leaders[3];
        SimTest t;

        (void) state;
        for (unsigned g = 0; g < 3; g++) {
                leaders[g] = open_event(&f, PERF_TYPE_RAW, mux_events[4 * g], (int) cpu, -1);
                assert_true(leaders[g] >= SIM_PERF_HANDLE_BASE);
                for (unsigned i = 1; i < 4; i++)
                        assert_true(open_event(&f, PERF_TYPE_RAW, mux_events[4 * g + i], (int) cpu,
                                               leaders[g]) >= SIM_PERF_HANDLE_BASE);
        }
        for (unsigned i = 0; i < MUX_SLICES; i++) {
                sim_advance(&f.t, slice);
                sim_perf_driver_tick(f.d);
        }

        t = sim_test_new("skx", mux_config);
        sim_measure(&t, &cpu, 1, mux_events, ELEMENTSOF(mux_events), slice * MUX_SLICES, &truth);
        sim_test_free(&t);

        for (unsigned g = 0; g < 3; g++) {
                GroupRead r = read_group(&f, leaders[g]);
                double share = (double) r.running / (double) r.enabled;

                print_message("group %u: running/enabled = %.4f\n", g, share);
                assert_int_equal(r.nr, 4);
                assert_close(share, 1.0 / 3, 0, 0.02, "time_running / time_enabled");
                for (unsigned i = 0; i < 4; i++) {
                        double scaled = (double) r.v[i].value * (double) r.enabled / (double) r.running;

                        print_message("group %u event %u: %" PRIu64 " scaled %.6g truth %.6g\n", g, i,
                                      r.v[i].value, scaled, truth.event[4 * g + i]);
                        assert_true(truth.event[4 * g + i] > 0);
                        assert_close(scaled, truth.event[4 * g + i], 0.02, 0, "scaled count");
                }
        }
        fixture_free(&f);
}

static void test_group_too_large_never_runs(void **state) {
        Fixture f = fixture_new("skx", mux_config);
        int leader;
        GroupRead r;

        (void) state;
        leader = open_event(&f, PERF_TYPE_RAW, mux_events[0], 1, -1);
        assert_true(leader >= SIM_PERF_HANDLE_BASE);
        for (unsigned i = 1; i < 5; i++)
                assert_true(open_event(&f, PERF_TYPE_RAW, mux_events[i], 1, leader) >= SIM_PERF_HANDLE_BASE);
        for (unsigned i = 0; i < 10; i++) {
                sim_advance(&f.t, (uint64_t) (sim_test_hz(&f.t) * 5e-3));
                sim_perf_driver_tick(f.d);
        }
        r = read_group(&f, leader);
        assert_int_equal(r.nr, 5);
        assert_true(r.enabled > 0);
        assert_int_equal(r.running, 0);
        for (unsigned i = 0; i < 5; i++)
                assert_int_equal(r.v[i].value, 0);
        fixture_free(&f);
}

static void test_disable_enable(void **state) {
        Fixture f = fixture_new("icx", mux_config);
        struct perf_event_attr a = {
                .type = PERF_TYPE_HARDWARE,
                .size = sizeof(a),
                .config = PERF_COUNT_HW_INSTRUCTIONS,
                .read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING,
                .disabled = 1,
        };
        uint64_t v[3];
        int h;

        (void) state;
        h = perf_driver_open(f.d, &a, -1, -1, 0, -1, 0);
        assert_true(h >= SIM_PERF_HANDLE_BASE);
        sim_advance(&f.t, WINDOW_CYCLES);
        assert_int_equal(perf_driver_read(f.d, h, v, sizeof(v)), sizeof(v));
        assert_int_equal(v[0], 0);
        assert_int_equal(v[1], 0);
        assert_int_equal(perf_driver_enable(f.d, h, true), 0);
        sim_advance(&f.t, WINDOW_CYCLES);
        assert_int_equal(perf_driver_read(f.d, h, v, sizeof(v)), sizeof(v));
        assert_true(v[0] > 0);
        assert_int_equal(v[1], v[2]);
        assert_close((double) v[1], WINDOW_CYCLES * 1e3 / f.t.machine->cpu_model->nominal_mhz, 0, 1,
                     "enabled");
        assert_int_equal(perf_driver_read(f.d, h, v, 2 * sizeof(uint64_t)), -ENOSPC);
        fixture_free(&f);
}

static void burn_cpu(double seconds) {
        struct timespec start, now;
        volatile uint64_t x = 0;

        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
        do {
                for (int i = 0; i < 100000; i++)
                        x += (uint64_t) i;
                clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
        } while ((double) (now.tv_sec - start.tv_sec) + (double) (now.tv_nsec - start.tv_nsec) * 1e-9 <
                 seconds);
        (void) x;       /* clang: the sum is only there to burn time */
}

/* The kernel's software events are what these tests count with; a kernel or container that
 * refuses perf_event_open skips them instead of failing. */
static void skip_without_perf(Fixture *f, int r) {
        if (r == -EACCES || r == -EPERM || r == -ENOSYS || r == -ENOENT || r == -ENODEV) {
                print_message("perf_event_open refused software events (%s): skipped\n", strerror(-r));
                fixture_free(f);
                skip();
        }
}

static void test_software_passes_through(void **state) {
        Fixture f = fixture_new("zen4", NULL);
        struct perf_event_attr a = {
                .type = PERF_TYPE_SOFTWARE,
                .size = sizeof(a),
                .config = PERF_COUNT_SW_TASK_CLOCK,
                .exclude_hv = 1,
        };
        uint64_t v0 = 0, v1 = 0;
        int h;

        (void) state;
        h = perf_driver_open(f.d, &a, 0, -1, -1, -1, 0);
        skip_without_perf(&f, h);
        assert_true(h >= 0 && h < SIM_PERF_HANDLE_BASE);
        assert_int_equal(perf_driver_read(f.d, h, &v0, sizeof(v0)), sizeof(v0));
        burn_cpu(0.05);
        assert_int_equal(perf_driver_read(f.d, h, &v1, sizeof(v1)), sizeof(v1));
        print_message("task-clock advanced %" PRIu64 " ns\n", v1 - v0);
        assert_true(v1 - v0 >= 40000000);
        /* a software event cannot join a simulated group, nor the other way round */
        assert_int_equal(open_event(&f, PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, 0, h), -EINVAL);
        perf_driver_close(f.d, h);
        assert_int_equal(perf_driver_read(f.d, h, &v1, sizeof(v1)), -EBADF);
        fixture_free(&f);
}

/* A task's hardware counts are the simulated rate per unhalted ns times the ns it ran. */
static void test_task_scope(void **state) {
        Fixture f = fixture_new("spr", mux_config);
        struct perf_event_attr a = {
                .type = PERF_TYPE_HARDWARE,
                .size = sizeof(a),
                .config = PERF_COUNT_HW_CPU_CYCLES,
                .read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING,
        };
        uint64_t v[3];
        int h;

        (void) state;
        h = perf_driver_open(f.d, &a, 0, -1, -1, -1, 0);
        skip_without_perf(&f, h);
        assert_true(h >= SIM_PERF_HANDLE_BASE);
        burn_cpu(0.05);
        assert_int_equal(perf_driver_read(f.d, h, v, sizeof(v)), sizeof(v));
        print_message("task: %" PRIu64 " cycles in %" PRIu64 " ns\n", v[0], v[2]);
        assert_true(v[2] >= 40000000);
        /* cycles per ns of run time: the nominal clock times the profile's unhalted rate */
        assert_true((double) v[0] / (double) v[2] > 0.5 && (double) v[0] / (double) v[2] < 10.0);
        fixture_free(&f);
}

/* A child pinned to real CPU 0 in a new cgroup of its own, waiting on its pipe to burn
 * `seconds` of CPU time. */
typedef struct Job {
        char dir[256];
        int dir_fd, go;
        pid_t pid;
} Job;

static bool job_start(Job *j, const char *top, const char *name, double seconds) {
        char procs[300], text[32];
        int pipefd[2], fd;
        cpu_set_t set;

        (void) snprintf(j->dir, sizeof(j->dir), "%s/pmugate-test-simperf-%d-%s", top, (int) getpid(), name);
        if (mkdir(j->dir, 0755) < 0)
                return false;
        j->dir_fd = open(j->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(j->dir_fd >= 0);
        assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);
        j->pid = fork();
        assert_true(j->pid >= 0);
        if (j->pid == 0) {
                char c;

                CPU_ZERO(&set);
                CPU_SET(0, &set);
                if (sched_setaffinity(0, sizeof(set), &set) < 0 || read(pipefd[0], &c, 1) != 1)
                        _exit(1);
                burn_cpu(seconds);
                _exit(0);
        }
        close(pipefd[0]);
        j->go = pipefd[1];
        (void) snprintf(procs, sizeof(procs), "%s/cgroup.procs", j->dir);
        (void) snprintf(text, sizeof(text), "%d\n", (int) j->pid);
        fd = open(procs, O_WRONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, strlen(text)), (ssize_t) strlen(text));
        close(fd);
        return true;
}

static void job_finish(Job *j) {
        int status;

        assert_int_equal(waitpid(j->pid, &status, 0), j->pid);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        close(j->dir_fd);
        for (int i = 0; i < 50 && rmdir(j->dir) < 0; i++)
                usleep(20000);
}

static void job_finish_failed(Job *j) {
        int status;

        (void) waitpid(j->pid, &status, 0);
        close(j->dir_fd);
        for (int i = 0; i < 50 && rmdir(j->dir) < 0; i++)
                usleep(20000);
}

/* Two real cgroups sharing one CPU: each job's cycles are its own run time at the simulated
 * CPU's rate, not the CPU's. */
static void test_cgroups_sharing_a_cpu(void **state) {
        const char *top = access("/sys/fs/cgroup/unified/cgroup.procs", F_OK) == 0 ? "/sys/fs/cgroup/unified"
                                                                                    : "/sys/fs/cgroup";
        struct perf_event_attr a = {
                .type = PERF_TYPE_HARDWARE,
                .size = sizeof(a),
                .config = PERF_COUNT_HW_CPU_CYCLES,
                .read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING,
        };
        double seconds[2] = { 0.05, 0.15 }, per_ns[2];
        const char *names[2] = { "a", "b" };
        Fixture f;
        Job jobs[2];
        int h[2];

        (void) state;
        if (access(top, W_OK) < 0 || !job_start(&jobs[0], top, names[0], seconds[0])) {
                print_message("no writable cgroup v2 hierarchy: skipped\n");
                skip();
        }
        assert_true(job_start(&jobs[1], top, names[1], seconds[1]));
        f = fixture_new("icx", mux_config);
        for (int k = 0; k < 2; k++) {
                h[k] = perf_driver_open(f.d, &a, -1, jobs[k].dir_fd, 0, -1, PERF_FLAG_PID_CGROUP);
                if (h[k] < 0)
                        for (int j = 0; j < 2; j++) {
                                close(jobs[j].go);      /* the child reads end-of-file and exits */
                                job_finish_failed(&jobs[j]);
                        }
                skip_without_perf(&f, h[k]);
                assert_true(h[k] >= SIM_PERF_HANDLE_BASE);
        }
        /* a group counts one cgroup */
        assert_int_equal(perf_driver_open(f.d, &a, -1, jobs[1].dir_fd, 0, h[0], PERF_FLAG_PID_CGROUP),
                         -EINVAL);
        assert_int_equal(perf_driver_open(f.d, &a, 0, -1, -1, h[0], 0), -EINVAL);
        for (int k = 0; k < 2; k++)
                assert_int_equal(write(jobs[k].go, "g", 1), 1);
        for (int k = 0; k < 2; k++) {
                uint64_t v[3];

                job_finish(&jobs[k]);
                assert_int_equal(perf_driver_read(f.d, h[k], v, sizeof(v)), sizeof(v));
                print_message("cgroup %s: %" PRIu64 " cycles, ran %" PRIu64 " ns (burned %.0f ms)\n",
                              names[k], v[0], v[2], seconds[k] * 1e3);
                assert_close((double) v[2], seconds[k] * 1e9, 0.3, 0, "the job's run time");
                per_ns[k] = (double) v[0] / (double) v[2];
                perf_driver_close(f.d, h[k]);
                close(jobs[k].go);
        }
        assert_close(per_ns[1], per_ns[0], 0.01, 0, "cycles per ns of each job");
        fixture_free(&f);
}

static void test_hostile_handles(void **state) {
        Fixture f = fixture_new("clx", NULL);
        int handles[] = { -1, INT_MIN, INT_MAX, SIM_PERF_HANDLE_BASE, SIM_PERF_HANDLE_BASE + 1000, 0, 2, 0 };
        uint64_t buf[8];
        int h;

        (void) state;
        h = open_event(&f, PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, 0, -1);
        assert_int_equal(h, SIM_PERF_HANDLE_BASE);
        perf_driver_close(f.d, h);
        handles[ELEMENTSOF(handles) - 1] = h;           /* closed */
        for (size_t i = 0; i < ELEMENTSOF(handles); i++) {
                assert_int_equal(perf_driver_read(f.d, handles[i], buf, sizeof(buf)), -EBADF);
                assert_int_equal(perf_driver_enable(f.d, handles[i], true), -EBADF);
                assert_int_equal(perf_driver_disable(f.d, handles[i], false), -EBADF);
                assert_int_equal(perf_driver_export_fd(f.d, handles[i]), -EBADF);
                assert_int_equal(open_event(&f, PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, 0,
                                            handles[i] < 0 ? INT_MAX : handles[i]), -EBADF);
                perf_driver_close(f.d, handles[i]);
        }
        /* CPUs that do not exist, sampling, unknown read_format bits */
        assert_int_equal(open_event(&f, PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, 100000, -1),
                         -EINVAL);
        assert_int_equal(open_event(&f, PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, -1, -1), -EINVAL);
        {
                struct perf_event_attr a = { .type = PERF_TYPE_RAW, .size = sizeof(a), .config = 0xc0,
                                             .sample_period = 1000 };

                assert_int_equal(perf_driver_open(f.d, &a, -1, -1, 0, -1, 0), -EINVAL);
                a.sample_period = 0;
                a.read_format = PERF_FORMAT_LOST << 1;
                assert_int_equal(perf_driver_open(f.d, &a, -1, -1, 0, -1, 0), -EINVAL);
        }
        fixture_free(&f);
}

static void test_uncore_imc(void **state) {
        static const char config[] = "[machine]\nsockets = 2\ncores = 4\nsmt = no\n"
                                     "[clock]\nmode = deterministic\ncycles_per_access = 0\n";

        (void) state;
        for (size_t k = 0; k < ELEMENTSOF(all_models); k++) {
                Fixture f = fixture_new(all_models[k], config);
                PerfCatalog *c = NULL;
                const PerfPmu *imc;
                uint32_t counter = UINT32_MAX;
                uint64_t before, after;
                GroupRead g;
                int rd, wr;

                assert_int_equal(sim_perf_catalog(f.t.backend, &c), 0);
                assert_non_null(perf_catalog_find(c, "cpu"));
                assert_non_null(perf_catalog_find(c, "hardware"));
                assert_int_equal(perf_catalog_find(c, "hardware")->type, PERF_TYPE_HARDWARE);
                assert_int_equal(perf_catalog_find(c, "hardware")->config_mask[0] &
                                 PERF_COUNT_HW_BRANCH_MISSES, PERF_COUNT_HW_BRANCH_MISSES);
                assert_int_equal(perf_catalog_find(c, "cpu")->type, PERF_TYPE_RAW);
                assert_string_equal(perf_catalog_find(c, "cpu")->write_class, "core-pmu");
                assert_non_null(perf_catalog_find(c, "software"));
                assert_int_equal(perf_catalog_core(c)->topdown, strcmp(all_models[k], "icx") == 0 ? 1 :
                                                                strcmp(all_models[k], "spr") == 0 ? 2 : 0);
                /* the LBR's depth as caps/branches says: Intel's 32, AMD's LbrExtV2 16 */
                assert_int_equal(perf_catalog_core(c)->branches, is_amd(all_models[k]) ? 16 : 32);
                assert_int_equal(perf_catalog_find(c, "cpu")->config_mask[0],
                                 is_amd(all_models[k]) ? UINT64_C(0xFFF84FFFF) : UINT64_C(0xFF84FFFF));
                imc = perf_catalog_find(c, "uncore_imc_1");
                if (strcmp(all_models[k], "skx") != 0 && strcmp(all_models[k], "clx") != 0 &&
                    strcmp(all_models[k], "spr") != 0) {
                        assert_null(imc);
                        perf_catalog_free(c);
                        fixture_free(&f);
                        continue;
                }
                assert_non_null(imc);
                assert_true(imc->type >= 32);
                assert_int_equal(imc->kind, PERF_PMU_UNCORE);
                assert_string_equal(imc->write_class, "uncore-imc");

                /* on package 1, through its first CPU */
                for (uint32_t i = 0; i < f.t.machine->n_counters; i++)
                        if (strcmp(f.t.machine->counters[i].name, "uncore_imc_1/cas_count_read") == 0 &&
                            f.t.machine->counters[i].package == 1)
                                counter = i;
                assert_true(counter != UINT32_MAX);
                rd = open_event(&f, imc->type, 0x0304, 4, -1);
                assert_true(rd >= SIM_PERF_HANDLE_BASE);
                wr = open_event(&f, imc->type, 0x0c04, 4, rd);
                assert_true(wr >= SIM_PERF_HANDLE_BASE);
                assert_int_equal(backend_counter_read(f.t.backend, counter, &before), 0);
                sim_advance(&f.t, WINDOW_CYCLES);
                g = read_group(&f, rd);
                assert_int_equal(backend_counter_read(f.t.backend, counter, &after), 0);
                print_message("%s imc read %" PRIu64 " (counter %" PRIu64 ") write %" PRIu64 "\n",
                              all_models[k], g.v[0].value, after - before, g.v[1].value);
                assert_true(g.v[0].value > 0 && g.v[1].value > 0);
                assert_int_equal(g.v[0].value, after - before);
                assert_int_equal(g.enabled, g.running);
                /* the kernel refuses exclusions on uncore PMUs, and other events */
                {
                        struct perf_event_attr a = { .type = imc->type, .size = sizeof(a), .config = 0x0304,
                                                     .exclude_kernel = 1 };

                        assert_int_equal(perf_driver_open(f.d, &a, -1, -1, 0, -1, 0), -EINVAL);
                }
                assert_int_equal(open_event(&f, imc->type, 0x0104, 0, -1), -EINVAL);
                assert_int_equal(open_event(&f, PERF_TYPE_RAW, 0xc0, 4, rd), -EINVAL);
                perf_catalog_free(c);
                fixture_free(&f);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_group_like_msr_path),
                cmocka_unit_test(test_topdown_icx),
                cmocka_unit_test(test_topdown_spr),
                cmocka_unit_test(test_no_topdown_elsewhere),
                cmocka_unit_test(test_multiplexing),
                cmocka_unit_test(test_group_too_large_never_runs),
                cmocka_unit_test(test_disable_enable),
                cmocka_unit_test(test_software_passes_through),
                cmocka_unit_test(test_task_scope),
                cmocka_unit_test(test_cgroups_sharing_a_cpu),
                cmocka_unit_test(test_hostile_handles),
                cmocka_unit_test(test_uncore_imc),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
