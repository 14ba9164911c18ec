/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: a PerfHandle over a driver that records what it is asked (perf/perf-handles.c):
 * leaders open disabled before their members and every group is enabled after all opened, a
 * failure closes what opened and names the event and target, rows are one per target and
 * group with a process's threads summed, and handed-off events are disabled before they close.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <msgpack.h>
#include <string.h>

#include "macro.h"
#include "perf/perf-handles.h"
#include "wire.h"

#define FAKE_EVENTS_MAX 64

typedef struct FakeDriver {
        PerfDriver base;
        int fail_at;                    /* the open that fails (count from 0), -1: none */
        int fail_errno;
        int n_opened;
        bool open[FAKE_EVENTS_MAX];
        bool enabled[FAKE_EVENTS_MAX];
        int group_of[FAKE_EVENTS_MAX];
        int disables_before_close;
        uint64_t value;                 /* what each event reads */
        char log[1024];
} FakeDriver;

/* Appends "<what><handle> " to the log of calls. */
static void note(FakeDriver *f, char what, int handle) {
        size_t n = strlen(f->log);

        (void) snprintf(f->log + n, sizeof(f->log) - n, "%c%d ", what, handle);
}

static int fake_open(PerfDriver *d, const struct perf_event_attr *attr, pid_t pid, int cgroup_fd, int cpu, int group,
                     unsigned long flags) {
        FakeDriver *f = (FakeDriver *) d;
        int h = f->n_opened;

        if (h == f->fail_at)
                return -f->fail_errno;
        assert_true(h < FAKE_EVENTS_MAX);
        /* a leader comes disabled; a member follows its open leader */
        assert_true(group < 0 ? attr->disabled : f->open[group]);
        f->n_opened++;
        f->open[h] = true;
        f->group_of[h] = group < 0 ? h : group;
        note(f, 'o', h);
        return h;
}

static ssize_t fake_read(PerfDriver *d, int handle, void *buf, size_t size) {
        FakeDriver *f = (FakeDriver *) d;
        uint64_t *v = buf;
        size_t n = 0;

        assert_true(f->open[handle]);
        for (int i = 0; i < f->n_opened; i++)
                n += f->group_of[i] == handle;
        if (size < (3 + 2 * n) * sizeof(uint64_t))
                return -ENOSPC;
        v[0] = n;
        v[1] = 100;
        v[2] = 50;
        for (size_t i = 0; i < n; i++) {
                v[3 + 2 * i] = f->value + i;
                v[4 + 2 * i] = i;
        }
        return (ssize_t) ((3 + 2 * n) * sizeof(uint64_t));
}

static int fake_enable(PerfDriver *d, int handle, bool group) {
        FakeDriver *f = (FakeDriver *) d;

        assert_true(group);
        f->enabled[handle] = true;
        note(f, 'e', handle);
        return 0;
}

static int fake_disable(PerfDriver *d, int handle, bool group) {
        FakeDriver *f = (FakeDriver *) d;

        assert_true(f->open[handle]);
        f->disables_before_close++;
        return 0;
}

static int fake_export_fd(PerfDriver *d, int handle) {
        return -EOPNOTSUPP;
}

static void fake_close(PerfDriver *d, int handle) {
        FakeDriver *f = (FakeDriver *) d;

        assert_true(f->open[handle]);
        f->open[handle] = false;
}

static void fake_free(PerfDriver *d) {
}

static const PerfDriverVTable fake_vtable = {
        .name = "fake", .open = fake_open, .read = fake_read, .enable = fake_enable, .disable = fake_disable,
        .export_fd = fake_export_fd, .close = fake_close, .free = fake_free,
};

static void fake_init(FakeDriver *f) {
        *f = (FakeDriver) { .base.vtable = &fake_vtable, .fail_at = -1, .value = 1000 };
}

static int n_open(const FakeDriver *f) {
        int n = 0;

        for (int i = 0; i < FAKE_EVENTS_MAX; i++)
                n += f->open[i];
        return n;
}

/* Two groups (two events and one), leaders with disabled set as perf_attr_build() sets it. */
static void attrs_of_two_groups(struct perf_event_attr attrs[3], uint8_t sizes[2]) {
        memset(attrs, 0, 3 * sizeof(*attrs));
        attrs[0].disabled = 1;
        attrs[2].disabled = 1;
        sizes[0] = 2;
        sizes[1] = 1;
}

static void test_open_order_and_rows(void **state) {
        /* a process of two threads: one target, two units, summed */
        const PerfUnit units[] = { { .target = 42, .pid = 42, .cpu = -1, .cgroup_fd = -1 },
                                   { .target = 42, .pid = 43, .cpu = -1, .cgroup_fd = -1 } };
        struct perf_event_attr attrs[3];
        uint8_t sizes[2];
        PerfOpenFailure failure;
        PerfHandle *h = NULL;
        FakeDriver f;
        msgpack_sbuffer sb;
        msgpack_packer pk;
        msgpack_unpacked u;
        const msgpack_object *rows, *row;

        fake_init(&f);
        attrs_of_two_groups(attrs, sizes);
        assert_int_equal(perf_handle_new(&f.base, PERF_SCOPE_PROCESS, 1000, attrs, sizes, 2, units, 2, &h), 0);
        assert_int_equal(h->n_targets, 1);
        assert_int_equal(perf_handle_open(h, &failure), 0);
        /* every event opens before any group is enabled, event by event on every unit (a
         * leader on each thread, then its member on each, in one batch each); then each
         * group's leader once, thread by thread */
        assert_string_equal(f.log, "o0 o1 o2 o3 o4 o5 e0 e4 e1 e5 ");
        assert_int_equal(perf_handle_n_open(h), 6);

        msgpack_sbuffer_init(&sb);
        msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
        assert_int_equal(perf_handle_pack_rows(h, &pk), 0);
        msgpack_unpacked_init(&u);
        assert_int_equal(msgpack_unpack_next(&u, sb.data, sb.size, NULL), MSGPACK_UNPACK_SUCCESS);
        rows = &u.data;
        assert_int_equal(rows->via.array.size, 2);
        row = &rows->via.array.ptr[0];
        assert_int_equal(row->via.array.size, _PERF_ROW_FIELDS);
        assert_int_equal(row->via.array.ptr[PERF_ROW_TARGET].via.u64, 42);
        assert_int_equal(row->via.array.ptr[PERF_ROW_GROUP].via.u64, 0);
        assert_int_equal(row->via.array.ptr[PERF_ROW_STATUS].via.u64, 0);
        /* two threads: times and values summed */
        assert_int_equal(row->via.array.ptr[PERF_ROW_ENABLED].via.u64, 200);
        assert_int_equal(row->via.array.ptr[PERF_ROW_RUNNING].via.u64, 100);
        assert_int_equal(row->via.array.ptr[PERF_ROW_VALUES].via.array.size, 2);
        assert_int_equal(row->via.array.ptr[PERF_ROW_VALUES].via.array.ptr[0].via.u64, 2000);
        assert_int_equal(row->via.array.ptr[PERF_ROW_VALUES].via.array.ptr[1].via.u64, 2002);
        row = &rows->via.array.ptr[1];
        assert_int_equal(row->via.array.ptr[PERF_ROW_GROUP].via.u64, 1);
        assert_int_equal(row->via.array.ptr[PERF_ROW_VALUES].via.array.size, 1);
        msgpack_unpacked_destroy(&u);
        msgpack_sbuffer_destroy(&sb);

        perf_handle_free(h);
        assert_int_equal(n_open(&f), 0);
        assert_int_equal(f.disables_before_close, 0);
}

static void test_failure_closes_everything(void **state) {
        const PerfUnit units[] = { { .target = 0, .pid = -1, .cpu = 0, .cgroup_fd = -1 },
                                   { .target = 1, .pid = -1, .cpu = 1, .cgroup_fd = -1 } };
        struct perf_event_attr attrs[3];
        uint8_t sizes[2];
        PerfOpenFailure failure;
        PerfHandle *h = NULL;
        FakeDriver f;
        char why[256];

        fake_init(&f);
        f.fail_at = 3;          /* CPU 1's second event: event 0 on CPUs 0 and 1, event 1 on CPU 0 opened */
        f.fail_errno = ENOENT;
        attrs_of_two_groups(attrs, sizes);
        attrs[1].config = 0x1234;
        assert_int_equal(perf_handle_new(&f.base, PERF_SCOPE_CPU, 1000, attrs, sizes, 2, units, 2, &h), 0);
        assert_int_equal(h->n_targets, 2);
        assert_int_equal(perf_handle_open(h, &failure), -ENOENT);
        assert_int_equal(n_open(&f), 0);
        assert_int_equal(perf_handle_n_open(h), 0);
        assert_int_equal(failure.event, 1);
        assert_int_equal(failure.target, 1);
        perf_open_failure_format(h, &failure, (const char *const[]) { "cpu", "cpu", "software" }, why, sizeof(why));
        assert_non_null(strstr(why, "the kernel does not know event 1 config 0x1234 on PMU 'cpu' (CPU 1)"));

        fake_init(&f);
        f.fail_at = 0;
        f.fail_errno = EACCES;
        assert_int_equal(perf_handle_open(h, &failure), -EACCES);
        perf_open_failure_format(h, &failure, NULL, why, sizeof(why));
        assert_non_null(strstr(why, "the kernel refused event 0"));

        fake_init(&f);
        f.fail_at = 2;
        f.fail_errno = EMFILE;
        assert_int_equal(perf_handle_open(h, &failure), -EMFILE);
        assert_int_equal(n_open(&f), 0);
        perf_open_failure_format(h, &failure, NULL, why, sizeof(why));
        assert_non_null(strstr(why, "open file limit"));
        perf_handle_free(h);
}

static void test_handed_off_disabled_before_close(void **state) {
        const PerfUnit unit = { .target = 7, .pid = 7, .cpu = -1, .cgroup_fd = -1 };
        struct perf_event_attr attrs[3];
        uint8_t sizes[2];
        PerfOpenFailure failure;
        PerfHandle *h = NULL;
        FakeDriver f;

        fake_init(&f);
        attrs_of_two_groups(attrs, sizes);
        /* a leader waiting for exec is not enabled by the daemon: the kernel does it */
        attrs[0].enable_on_exec = 1;
        assert_int_equal(perf_handle_new(&f.base, PERF_SCOPE_PROCESS, 1000, attrs, sizes, 2, &unit, 1, &h), 0);
        assert_int_equal(perf_handle_open(h, &failure), 0);
        assert_false(f.enabled[0]);
        assert_true(f.enabled[2]);
        h->handed_off = true;
        perf_handle_free(h);
        assert_int_equal(f.disables_before_close, 3);
        assert_int_equal(n_open(&f), 0);
}

static void test_bounds(void **state) {
        const PerfUnit unit = { .target = 0, .pid = -1, .cpu = 0, .cgroup_fd = -1 };
        struct perf_event_attr attrs[PERF_EVENTS_PER_OPEN_MAX + 1] = {};
        uint8_t sizes[PERF_GROUPS_PER_OPEN_MAX + 1];
        PerfHandle *h = NULL;
        FakeDriver f;

        fake_init(&f);
        memset(sizes, PERF_GROUP_EVENTS_MAX, sizeof(sizes));
        assert_int_equal(perf_handle_new(&f.base, PERF_SCOPE_CPU, 0, attrs, sizes, PERF_GROUPS_PER_OPEN_MAX + 1, &unit, 1,
                                         &h), -EINVAL);
        assert_int_equal(perf_handle_new(&f.base, PERF_SCOPE_CPU, 0, attrs, sizes, 4, &unit, 1, &h), -EINVAL);
        assert_int_equal(perf_handle_new(&f.base, PERF_SCOPE_CPU, 0, attrs, sizes, 1, &unit, 0, &h), -EINVAL);
        assert_null(h);
}

static void test_group_on_one_cpu(void **state) {
        /* an uncore group opens on its PMU's CPU alone; a core group on every CPU */
        const PerfUnit units[] = { { .target = 0, .pid = -1, .cpu = 0, .cgroup_fd = -1 },
                                   { .target = 1, .pid = -1, .cpu = 1, .cgroup_fd = -1 } };
        struct perf_event_attr attrs[3];
        uint8_t sizes[2];
        PerfOpenFailure failure;
        PerfHandle *h = NULL;
        FakeDriver f;
        msgpack_sbuffer sb;
        msgpack_packer pk;
        msgpack_unpacked u;

        fake_init(&f);
        attrs_of_two_groups(attrs, sizes);
        assert_int_equal(perf_handle_new(&f.base, PERF_SCOPE_CPU, 0, attrs, sizes, 2, units, 2, &h), 0);
        h->group_cpu[0] = 1;
        assert_int_equal(perf_handle_open(h, &failure), 0);
        /* group 0 on CPU 1 alone (handles 0, 1), group 1 on CPU 0 (2) and CPU 1 (3) */
        assert_string_equal(f.log, "o0 o1 o2 o3 e2 e0 e3 ");
        assert_int_equal(perf_handle_n_open(h), 4);

        msgpack_sbuffer_init(&sb);
        msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
        assert_int_equal(perf_handle_pack_rows(h, &pk), 0);
        msgpack_unpacked_init(&u);
        assert_int_equal(msgpack_unpack_next(&u, sb.data, sb.size, NULL), MSGPACK_UNPACK_SUCCESS);
        /* every target has every group's row: group 0 is not on CPU 0 */
        assert_int_equal(u.data.via.array.size, 4);
        assert_int_equal(u.data.via.array.ptr[0].via.array.ptr[PERF_ROW_TARGET].via.u64, 0);
        assert_int_equal(u.data.via.array.ptr[0].via.array.ptr[PERF_ROW_GROUP].via.u64, 0);
        assert_int_equal(u.data.via.array.ptr[0].via.array.ptr[PERF_ROW_STATUS].via.i64, -ENODEV);
        assert_int_equal(u.data.via.array.ptr[0].via.array.ptr[PERF_ROW_VALUES].via.array.size, 0);
        assert_int_equal(u.data.via.array.ptr[1].via.array.ptr[PERF_ROW_GROUP].via.u64, 1);
        assert_int_equal(u.data.via.array.ptr[1].via.array.ptr[PERF_ROW_STATUS].via.u64, 0);
        assert_int_equal(u.data.via.array.ptr[2].via.array.ptr[PERF_ROW_TARGET].via.u64, 1);
        assert_int_equal(u.data.via.array.ptr[2].via.array.ptr[PERF_ROW_GROUP].via.u64, 0);
        assert_int_equal(u.data.via.array.ptr[2].via.array.ptr[PERF_ROW_VALUES].via.array.size, 2);
        assert_int_equal(u.data.via.array.ptr[3].via.array.ptr[PERF_ROW_GROUP].via.u64, 1);
        msgpack_unpacked_destroy(&u);
        msgpack_sbuffer_destroy(&sb);
        perf_handle_free(h);
        assert_int_equal(n_open(&f), 0);
}

/* A reply in parts packs rows first .. first + n - 1 of the same order: every target has a row
 * of every group (CPU 0's row of group 0, which counts on CPU 1 alone, reads -ENODEV). */
static void test_row_range(void **state) {
        const PerfUnit units[] = { { .target = 0, .pid = -1, .cpu = 0, .cgroup_fd = -1 },
                                   { .target = 1, .pid = -1, .cpu = 1, .cgroup_fd = -1 } };
        struct perf_event_attr attrs[3];
        uint8_t sizes[2];
        PerfOpenFailure failure;
        PerfHandle *h = NULL;
        FakeDriver f;
        msgpack_sbuffer sb;
        msgpack_packer pk;
        msgpack_unpacked u;

        fake_init(&f);
        attrs_of_two_groups(attrs, sizes);
        assert_int_equal(perf_handle_new(&f.base, PERF_SCOPE_CPU, 0, attrs, sizes, 2, units, 2, &h), 0);
        h->group_cpu[0] = 1;
        assert_int_equal(perf_handle_open(h, &failure), 0);
        assert_int_equal(perf_handle_n_rows(h), 4);

        msgpack_sbuffer_init(&sb);
        msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
        assert_int_equal(perf_handle_pack_row_range(h, &pk, 1, 2), 0);
        msgpack_unpacked_init(&u);
        assert_int_equal(msgpack_unpack_next(&u, sb.data, sb.size, NULL), MSGPACK_UNPACK_SUCCESS);
        assert_int_equal(u.data.via.array.size, 2);
        assert_int_equal(u.data.via.array.ptr[0].via.array.ptr[PERF_ROW_TARGET].via.u64, 0);
        assert_int_equal(u.data.via.array.ptr[0].via.array.ptr[PERF_ROW_GROUP].via.u64, 1);
        assert_int_equal(u.data.via.array.ptr[0].via.array.ptr[PERF_ROW_VALUES].via.array.size, 1);
        assert_int_equal(u.data.via.array.ptr[1].via.array.ptr[PERF_ROW_TARGET].via.u64, 1);
        assert_int_equal(u.data.via.array.ptr[1].via.array.ptr[PERF_ROW_GROUP].via.u64, 0);
        assert_int_equal(u.data.via.array.ptr[1].via.array.ptr[PERF_ROW_VALUES].via.array.size, 2);

        /* the group that counts on CPU 1 alone has CPU 0's row, empty */
        msgpack_unpacked_destroy(&u);
        msgpack_sbuffer_clear(&sb);
        assert_int_equal(perf_handle_pack_row_range(h, &pk, 0, 1), 0);
        msgpack_unpacked_init(&u);
        assert_int_equal(msgpack_unpack_next(&u, sb.data, sb.size, NULL), MSGPACK_UNPACK_SUCCESS);
        assert_int_equal(u.data.via.array.ptr[0].via.array.ptr[PERF_ROW_STATUS].via.i64, -ENODEV);
        assert_int_equal(u.data.via.array.ptr[0].via.array.ptr[PERF_ROW_VALUES].via.array.size, 0);
        msgpack_unpacked_destroy(&u);
        msgpack_sbuffer_destroy(&sb);

        /* past the last row: nothing packed */
        msgpack_sbuffer_init(&sb);
        msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
        assert_int_equal(perf_handle_pack_row_range(h, &pk, 3, 2), -EINVAL);
        assert_int_equal(perf_handle_pack_row_range(h, &pk, SIZE_MAX, 2), -EINVAL);
        assert_int_equal(sb.size, 0);
        msgpack_sbuffer_destroy(&sb);
        perf_handle_free(h);
        assert_int_equal(n_open(&f), 0);
}

/* A driver that opens in batches, as the kernel's through its opener: each batch recorded. */
#define BATCH_UNITS 300
#define BATCH_EVENTS_MAX (2 * BATCH_UNITS)

typedef struct BatchDriver {
        PerfDriver base;
        int n_opened, fail_at;
        bool open[BATCH_EVENTS_MAX];
        int group_of[BATCH_EVENTS_MAX];
        int cpu_of[BATCH_EVENTS_MAX];
        size_t sizes[16], fds[16], n_batches;
} BatchDriver;

static int batch_open(PerfDriver *d, const struct perf_event_attr *attr, pid_t pid, int cgroup_fd, int cpu,
                      int group, unsigned long flags) {
        /* a driver that opens in batches is never asked for one event alone */
        fail();
        return -EIO;
}

static int batch_open_batch(PerfDriver *d, const PerfDriverEvent *events, size_t n, int *ret_handles) {
        BatchDriver *b = (BatchDriver *) d;
        size_t fds = 0;

        assert_true(n > 0 && n <= PERF_OPENER_BATCH_MAX);
        assert_true(b->n_batches < ELEMENTSOF(b->sizes));
        for (size_t i = 0; i < n; i++) {
                int h = b->n_opened;

                fds += (events[i].group >= 0) + (events[i].cgroup_fd >= 0);
                assert_true(!!(events[i].flags & PERF_FLAG_PID_CGROUP) == (events[i].cgroup_fd >= 0));
                /* a member's leader is open, on the member's own CPU */
                if (events[i].group >= 0) {
                        assert_true(b->open[events[i].group]);
                        assert_int_equal(b->cpu_of[events[i].group], events[i].cpu);
                }
                if (h == b->fail_at) {
                        ret_handles[i] = -ENOSPC;
                        b->fail_at = -1;
                        continue;
                }
                assert_true(h < BATCH_EVENTS_MAX);
                b->open[h] = true;
                b->group_of[h] = events[i].group;
                b->cpu_of[h] = events[i].cpu;
                b->n_opened++;
                ret_handles[i] = h;
        }
        assert_true(fds <= PERF_OPENER_BATCH_FDS_MAX);
        b->sizes[b->n_batches] = n;
        b->fds[b->n_batches++] = fds;
        return 0;
}

static int batch_enable(PerfDriver *d, int handle, bool group) {
        return 0;
}

static void batch_close(PerfDriver *d, int handle) {
        BatchDriver *b = (BatchDriver *) d;

        assert_true(b->open[handle]);
        b->open[handle] = false;
}

static const PerfDriverVTable batch_vtable = {
        .name = "batch", .open = batch_open, .open_batch = batch_open_batch, .read = fake_read,
        .enable = batch_enable, .disable = fake_disable, .export_fd = fake_export_fd, .close = batch_close,
        .free = fake_free,
};

static void test_opens_in_batches(void **state) {
        static PerfUnit units[BATCH_UNITS];
        struct perf_event_attr attrs[2] = { { .type = PERF_TYPE_SOFTWARE, .disabled = 1 },
                                            { .type = PERF_TYPE_SOFTWARE } };
        uint8_t sizes[1] = { 2 };
        PerfOpenFailure failure;
        PerfHandle *h = NULL;
        BatchDriver b = { .base.vtable = &batch_vtable, .fail_at = -1 };
        int cgroup = 7;         /* a job's directory fd, as the driver sees it: never used here */

        for (size_t u = 0; u < BATCH_UNITS; u++)
                units[u] = (PerfUnit) { .target = (int64_t) u, .pid = -1, .cpu = (int) u, .cgroup_fd = cgroup };
        assert_int_equal(perf_handle_new(&b.base, PERF_SCOPE_JOB, 1000, attrs, sizes, 1, units, BATCH_UNITS, &h), 0);
        assert_int_equal(perf_handle_open(h, &failure), 0);
        assert_int_equal(perf_handle_n_open(h), 2 * BATCH_UNITS);
        /* The leaders with their cgroup fd, 253 a batch; the members with the cgroup's and their
         * leader's, as many as 253 fds allow. */
        assert_int_equal(b.n_batches, 5);
        assert_int_equal(b.sizes[0], PERF_OPENER_BATCH_MAX);
        assert_int_equal(b.sizes[1], BATCH_UNITS - PERF_OPENER_BATCH_MAX);
        assert_int_equal(b.sizes[2], PERF_OPENER_BATCH_FDS_MAX / 2);
        assert_int_equal(b.sizes[3], PERF_OPENER_BATCH_FDS_MAX / 2);
        assert_int_equal(b.sizes[4], BATCH_UNITS - 2 * (PERF_OPENER_BATCH_FDS_MAX / 2));
        for (size_t u = 0; u < BATCH_UNITS; u++)
                assert_int_equal(b.group_of[h->events[u * 2 + 1]], h->events[u * 2]);
        perf_handle_free(h);
        for (size_t i = 0; i < BATCH_EVENTS_MAX; i++)
                assert_false(b.open[i]);

        /* One entry of a later batch fails: it is the failure, and everything that opened,
         * in that batch and before, is closed. */
        b = (BatchDriver) { .base.vtable = &batch_vtable, .fail_at = BATCH_UNITS + 130 };
        assert_int_equal(perf_handle_new(&b.base, PERF_SCOPE_JOB, 1000, attrs, sizes, 1, units, BATCH_UNITS, &h), 0);
        assert_int_equal(perf_handle_open(h, &failure), -ENOSPC);
        assert_int_equal(failure.event, 1);
        assert_int_equal(failure.target, 130);
        assert_int_equal(perf_handle_n_open(h), 0);
        for (size_t i = 0; i < BATCH_EVENTS_MAX; i++)
                assert_false(b.open[i]);
        perf_handle_free(h);
}

/* An open in turns (perf_handle_open_some()): at most max_fds a call, where the last stopped,
 * nothing enabled before the last; a failure in a later turn closes what the earlier opened. */
static void test_open_in_turns(void **state) {
        const PerfUnit units[] = { { .target = 0, .pid = -1, .cpu = 0, .cgroup_fd = -1 },
                                   { .target = 1, .pid = -1, .cpu = 1, .cgroup_fd = -1 },
                                   { .target = 2, .pid = -1, .cpu = 2, .cgroup_fd = -1 },
                                   { .target = 3, .pid = -1, .cpu = 3, .cgroup_fd = -1 } };
        struct perf_event_attr attrs[3];
        uint8_t sizes[2];
        PerfOpenFailure failure;
        PerfHandle *h = NULL;
        FakeDriver f;

        fake_init(&f);
        attrs_of_two_groups(attrs, sizes);
        assert_int_equal(perf_handle_new(&f.base, PERF_SCOPE_CPU, 1000, attrs, sizes, 2, units, 4, &h), 0);
        assert_int_equal(perf_handle_open_some(h, 0, &failure), -EINVAL);
        /* 12 fds, 5 a turn: 5, 10, then the last 2 and the enables */
        assert_int_equal(perf_handle_open_some(h, 5, &failure), 0);
        assert_int_equal(perf_handle_n_open(h), 5);
        assert_int_equal(perf_handle_open_some(h, 5, &failure), 0);
        assert_int_equal(perf_handle_n_open(h), 10);
        assert_null(strchr(f.log, 'e'));
        assert_int_equal(perf_handle_open_some(h, 5, &failure), 1);
        assert_int_equal(perf_handle_n_open(h), 12);
        assert_int_equal(n_open(&f), 12);
        /* each unit's two leaders enabled, after every open */
        assert_non_null(strstr(f.log, "o11 e"));
        for (size_t u = 0; u < 4; u++) {
                assert_true(f.enabled[h->events[u * 3 + 0]]);
                assert_true(f.enabled[h->events[u * 3 + 2]]);
        }
        perf_handle_free(h);
        assert_int_equal(n_open(&f), 0);

        /* the 8th open fails, in the second turn: the 5 of the first close too */
        fake_init(&f);
        f.fail_at = 7;
        f.fail_errno = EMFILE;
        assert_int_equal(perf_handle_new(&f.base, PERF_SCOPE_CPU, 1000, attrs, sizes, 2, units, 4, &h), 0);
        assert_int_equal(perf_handle_open_some(h, 5, &failure), 0);
        assert_int_equal(n_open(&f), 5);
        assert_int_equal(perf_handle_open_some(h, 5, &failure), -EMFILE);
        assert_int_equal(failure.error, -EMFILE);
        assert_int_equal(n_open(&f), 0);
        assert_int_equal(perf_handle_n_open(h), 0);
        perf_handle_free(h);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_open_order_and_rows),
                cmocka_unit_test(test_failure_closes_everything),
                cmocka_unit_test(test_handed_off_disabled_before_close),
                cmocka_unit_test(test_bounds),
                cmocka_unit_test(test_group_on_one_cpu),
                cmocka_unit_test(test_row_range),
                cmocka_unit_test(test_opens_in_batches),
                cmocka_unit_test(test_open_in_turns),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
