/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libpmugate's timing_open (include/pmugate/timing.h) against a real pmugated, for
 * test_timing_open.py: a child of this process waits on a pipe, the library opens the events
 * on it and receives one fd per CPU, each ring is mapped, the child spins in user space, and the
 * PERF_RECORD_SAMPLE records of the child's pid are counted per ring; then the handle closes.
 * Prints "key value" lines: "refused REASON", or "fds N", "period P", "cpu I C", "samples I N",
 * "others I N" (samples of another pid), "closed R".
 *
 * Usage: timing-client SOCKET MODE PERIOD CPU... (MODE "ips" or "branches"; PERIOD 0: the
 * daemon's default)
 */
#include <errno.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pmugate/pmugate.h"
#include "pmugate/timing.h"
#include "pmugate-limits.h"

/* In user space: the clock is read (a system call) once per million additions only, since the
 * events sample user space alone. */
static void spin_cpu_ms(unsigned ms) {
        struct timespec start, now;
        volatile uint64_t sum = 0;

        (void) clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &start);
        do {
                for (unsigned i = 0; i < 1000000; i++)
                        sum += i;
                (void) clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
        } while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 < ms);
        (void) sum;     /* clang: the sum is only there to burn time */
}

/* Counts the samples in a mapped ring: of pid, and of any other pid. */
static void count_samples(const void *ring, pid_t pid, unsigned *ret_mine, unsigned *ret_others) {
        const struct perf_event_mmap_page *meta = ring;
        const unsigned char *data = (const unsigned char *) ring + (meta->data_offset ?: (uint64_t) getpagesize());
        uint64_t size = meta->data_size ?: TIMING_RING_DATA_BYTES;
        uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
        uint64_t pos = head > size ? head - size : 0;

        *ret_mine = *ret_others = 0;
        while (pos + sizeof(struct perf_event_header) <= head) {
                struct perf_event_header h;
                uint32_t sample_pid = 0;

                for (size_t i = 0; i < sizeof(h); i++)
                        ((unsigned char *) &h)[i] = data[(pos + i) % size];
                if (h.size < sizeof(h))
                        break;
                if (h.type == PERF_RECORD_SAMPLE) {
                        /* IP, then pid and tid */
                        for (size_t i = 0; i < sizeof(sample_pid); i++)
                                ((unsigned char *) &sample_pid)[i] = data[(pos + sizeof(h) + 8 + i) % size];
                        if ((pid_t) sample_pid == pid)
                                (*ret_mine)++;
                        else
                                (*ret_others)++;
                }
                pos += h.size;
        }
}

int main(int argc, char *argv[]) {
        pmugate_timing_request req = {};
        pmugate_timing_handle *h = NULL;
        /* one more than a request may name: the library refuses it */
        uint32_t cpus[TIMING_CPUS_PER_OPEN + 1];
        void *rings[TIMING_CPUS_PER_OPEN] = {};
        size_t ring_bytes = (size_t) getpagesize() + TIMING_RING_DATA_BYTES, n_cpus = 0;
        char reason[PMUGATE_REASON_MAX] = "";
        pmugate *c = NULL;
        int go[2], r;
        pid_t child;

        if (argc < 5 || argc - 4 > (int) TIMING_CPUS_PER_OPEN + 1) {
                fprintf(stderr, "usage: timing-client SOCKET MODE PERIOD CPU...\n");
                return 2;
        }
        for (int i = 4; i < argc; i++)
                cpus[n_cpus++] = (uint32_t) strtoul(argv[i], NULL, 10);
        if (pipe(go) < 0)
                return 1;
        child = fork();
        if (child < 0)
                return 1;
        if (child == 0) {
                char b;

                (void) close(go[1]);
                if (read(go[0], &b, 1) != 1)
                        _exit(0);
                spin_cpu_ms(500);
                _exit(0);
        }
        (void) close(go[0]);

        r = pmugate_connect(argv[1], &c);
        if (r < 0) {
                printf("refused cannot connect: %s\n", strerror(-r));
                return 1;
        }
        req = (pmugate_timing_request) {
                .mode = strcmp(argv[2], "branches") == 0 ? PMUGATE_TIMING_BRANCHES : PMUGATE_TIMING_IPS,
                .pid = child,
                .period = strtoull(argv[3], NULL, 10),
                .cpus = cpus,
                .n_cpus = n_cpus,
        };
        r = pmugate_timing_open(c, &req, &h, reason, sizeof(reason));
        if (r < 0) {
                printf("refused %s\n", reason);
                (void) kill(child, SIGKILL);
                (void) waitpid(child, NULL, 0);
                pmugate_disconnect(c);
                return 0;
        }
        printf("fds %zu\nperiod %" PRIu64 "\n", pmugate_timing_n_fds(h), pmugate_timing_period(h));
        for (size_t i = 0; i < pmugate_timing_n_fds(h); i++) {
                printf("cpu %zu %d\n", i, pmugate_timing_cpu(h, i));
                rings[i] = mmap(NULL, ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, pmugate_timing_fd(h, i), 0);
                if (rings[i] == MAP_FAILED) {
                        printf("mmap %zu %s\n", i, strerror(errno));
                        rings[i] = NULL;
                }
        }
        printf("past %d %d\n", pmugate_timing_fd(h, pmugate_timing_n_fds(h)), pmugate_timing_cpu(h, pmugate_timing_n_fds(h)));
        (void) write(go[1], "x", 1);
        (void) waitpid(child, NULL, 0);
        for (size_t i = 0; i < pmugate_timing_n_fds(h); i++) {
                unsigned mine = 0, others = 0;

                if (rings[i])
                        count_samples(rings[i], child, &mine, &others);
                printf("samples %zu %u\nothers %zu %u\n", i, mine, i, others);
        }
        for (size_t i = 0; i < n_cpus; i++)
                if (rings[i])
                        (void) munmap(rings[i], ring_bytes);
        printf("closed %d\n", pmugate_timing_close(c, h));
        pmugate_disconnect(c);
        return 0;
}
