/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: the perf requests' wire (client/core/perf-wire.h): what a perf_open request
 * carries, what the library refuses to send, and how a perf_read reply's rows are checked
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <msgpack.h>
#include <stdio.h>
#include <string.h>

#include "core/perf-wire.h"
#include "message-pack.h"
#include "message.h"
#include "wire.h"

static pmugate_perf_event event(const char *pmu, uint64_t config) {
        pmugate_perf_event e = { .config = config };

        (void) snprintf(e.pmu, sizeof(e.pmu), "%s", pmu);
        return e;
}

/* Packs req as the library sends it and unpacks it into ret (zone owned by the caller). */
static void pack_request(const pmugate_perf_request *req, msgpack_sbuffer *sb, msgpack_zone *zone,
                         msgpack_object *ret) {
        msgpack_packer pk;
        size_t off = 0;

        msgpack_sbuffer_init(sb);
        msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
        assert_int_equal(request_pack_begin(&pk, 7, request_type_to_string(REQUEST_PERF_OPEN),
                                            perf_request_keys(req)), 0);
        assert_int_equal(perf_request_pack(&pk, req), 0);
        assert_true(msgpack_zone_init(zone, 4096));
        assert_int_equal(msgpack_unpack(sb->data, sb->size, &off, zone, ret), MSGPACK_UNPACK_SUCCESS);
        assert_int_equal(off, sb->size);
        assert_int_equal(ret->type, MSGPACK_OBJECT_MAP);
}

static bool key_is_string(const msgpack_object *map, const char *key, const char *value) {
        const msgpack_object *o = msgpack_map_get(map, key);

        return o && o->type == MSGPACK_OBJECT_STR && o->via.str.size == strlen(value) &&
               memcmp(o->via.str.ptr, value, o->via.str.size) == 0;
}

static void test_request_process(void **state) {
        pmugate_perf_event g0[] = { event("software", 1), event("software", 2) };
        pmugate_perf_group groups[] = { { g0, 2 } };
        pmugate_perf_request req = {
                .scope = PMUGATE_PERF_SCOPE_PROCESS, .pid = 4242, .follow = true, .on_exec = true,
                .groups = groups, .n_groups = 1,
        };
        const msgpack_object *o, *ev;
        msgpack_sbuffer sb;
        msgpack_zone zone;
        msgpack_object map;

        (void) snprintf(g0[1].name, sizeof(g0[1].name), "page-faults");
        assert_int_equal(perf_request_check(&req, NULL, 0), 0);
        pack_request(&req, &sb, &zone, &map);
        /* v, id, op and scope, pid, follow, on_exec, handoff, groups: no cpus */
        assert_int_equal(map.via.map.size, 3 + 6);
        assert_true(key_is_string(&map, "op", "perf_open"));
        assert_true(key_is_string(&map, "scope", "process"));
        assert_null(msgpack_map_get(&map, "cpus"));
        o = msgpack_map_get(&map, "pid");
        assert_non_null(o);
        assert_int_equal(o->via.u64, 4242);
        o = msgpack_map_get(&map, "on_exec");
        assert_true(o && o->type == MSGPACK_OBJECT_BOOLEAN && o->via.boolean);
        o = msgpack_map_get(&map, "handoff");
        assert_true(o && o->type == MSGPACK_OBJECT_BOOLEAN && !o->via.boolean);
        o = msgpack_map_get(&map, "groups");
        assert_true(o && o->type == MSGPACK_OBJECT_ARRAY && o->via.array.size == 1);
        assert_int_equal(o->via.array.ptr[0].via.array.size, 2);
        /* pmu, config, kernel; a name only where one is given; config1/2 only where set */
        ev = &o->via.array.ptr[0].via.array.ptr[0];
        assert_int_equal(ev->via.map.size, 3);
        assert_true(key_is_string(ev, "pmu", "software"));
        assert_null(msgpack_map_get(ev, "config1"));
        ev = &o->via.array.ptr[0].via.array.ptr[1];
        assert_int_equal(ev->via.map.size, 4);
        assert_true(key_is_string(ev, "name", "page-faults"));
        assert_int_equal(msgpack_map_get(ev, "config")->via.u64, 2);
        msgpack_zone_destroy(&zone);
        msgpack_sbuffer_destroy(&sb);
}

/* One thread alone: "thread" sent only when asked, never with follow or on_exec. */
static void test_request_thread(void **state) {
        pmugate_perf_event g0[] = { event("software", 1) };
        pmugate_perf_group groups[] = { { g0, 1 } };
        pmugate_perf_request req = {
                .scope = PMUGATE_PERF_SCOPE_PROCESS, .pid = 4243, .thread = true, .handoff = true,
                .groups = groups, .n_groups = 1,
        };
        const msgpack_object *o;
        msgpack_sbuffer sb;
        msgpack_zone zone;
        msgpack_object map;
        char reason[200];

        assert_int_equal(perf_request_check(&req, reason, sizeof(reason)), 0);
        pack_request(&req, &sb, &zone, &map);
        assert_int_equal(map.via.map.size, 3 + 7);
        o = msgpack_map_get(&map, "thread");
        assert_true(o && o->type == MSGPACK_OBJECT_BOOLEAN && o->via.boolean);
        o = msgpack_map_get(&map, "follow");
        assert_true(o && o->type == MSGPACK_OBJECT_BOOLEAN && !o->via.boolean);
        msgpack_zone_destroy(&zone);
        msgpack_sbuffer_destroy(&sb);

        req.follow = true;
        assert_int_equal(perf_request_check(&req, reason, sizeof(reason)), -EINVAL);
        assert_non_null(strstr(reason, "counted alone"));
        req.follow = false;
        req.on_exec = true;
        assert_int_equal(perf_request_check(&req, reason, sizeof(reason)), -EINVAL);
        req = (pmugate_perf_request) { .scope = PMUGATE_PERF_SCOPE_JOB, .thread = true, .groups = groups,
                                       .n_groups = 1 };
        assert_int_equal(perf_request_check(&req, reason, sizeof(reason)), -EINVAL);
        assert_non_null(strstr(reason, "belong to scope process"));
}

/* A monitor's job named by its id: "job" sent with scope job only, never empty. */
static void test_request_named_job(void **state) {
        pmugate_perf_event g0[] = { event("hardware", 0), event("hardware", 1) };
        pmugate_perf_group groups[] = { { g0, 2 } };
        pmugate_perf_request req = {
                .scope = PMUGATE_PERF_SCOPE_JOB, .job = "4711", .groups = groups, .n_groups = 1,
        };
        msgpack_sbuffer sb;
        msgpack_zone zone;
        msgpack_object map;
        char reason[200];

        assert_int_equal(perf_request_check(&req, reason, sizeof(reason)), 0);
        pack_request(&req, &sb, &zone, &map);
        /* v, id, op and scope, job, groups */
        assert_int_equal(map.via.map.size, 3 + 3);
        assert_true(key_is_string(&map, "job", "4711"));
        msgpack_zone_destroy(&zone);
        msgpack_sbuffer_destroy(&sb);

        req.job = NULL;
        pack_request(&req, &sb, &zone, &map);
        assert_null(msgpack_map_get(&map, "job"));
        msgpack_zone_destroy(&zone);
        msgpack_sbuffer_destroy(&sb);

        req.job = "";
        assert_int_equal(perf_request_check(&req, reason, sizeof(reason)), -EINVAL);
        req.job = "4711";
        req.scope = PMUGATE_PERF_SCOPE_PROCESS;
        assert_int_equal(perf_request_check(&req, reason, sizeof(reason)), -EINVAL);
        assert_non_null(strstr(reason, "scope job"));
}

static void test_request_cpu(void **state) {
        uint32_t cpus[] = { 0, 1, 2, 3 };
        pmugate_perf_event g0[] = { event("cpu", 0x0400), event("cpu", 0x8000) };
        pmugate_perf_event g1[] = { event("cpu", 0x1d3) };
        pmugate_perf_group groups[] = { { g0, 2 }, { g1, 1 } };
        pmugate_perf_request req = {
                .scope = PMUGATE_PERF_SCOPE_CPU, .cpus = cpus, .n_cpus = 4, .groups = groups, .n_groups = 2,
        };
        const msgpack_object *o;
        msgpack_sbuffer sb;
        msgpack_zone zone;
        msgpack_object map;

        g1[0].kernel = true;
        g1[0].has_config1 = true;
        g1[0].config1 = 5;
        pack_request(&req, &sb, &zone, &map);
        assert_int_equal(map.via.map.size, 3 + 3);
        assert_null(msgpack_map_get(&map, "pid"));
        assert_null(msgpack_map_get(&map, "on_exec"));
        o = msgpack_map_get(&map, "cpus");
        assert_true(o && o->type == MSGPACK_OBJECT_ARRAY && o->via.array.size == 4);
        assert_int_equal(o->via.array.ptr[3].via.u64, 3);
        o = msgpack_map_get(&map, "groups");
        assert_int_equal(o->via.array.size, 2);
        o = &o->via.array.ptr[1].via.array.ptr[0];
        assert_int_equal(msgpack_map_get(o, "config1")->via.u64, 5);
        assert_true(msgpack_map_get(o, "kernel")->via.boolean);
        msgpack_zone_destroy(&zone);
        msgpack_sbuffer_destroy(&sb);
}

static void test_request_refused(void **state) {
        uint32_t cpus[] = { 0 };
        pmugate_perf_event big[PERF_GROUP_EVENTS_MAX + 1];
        pmugate_perf_event one[] = { event("cpu", 0x3c) };
        pmugate_perf_group groups[] = { { one, 1 } };
        pmugate_perf_group too_big[] = { { big, PERF_GROUP_EVENTS_MAX + 1 } };
        pmugate_perf_request req;
        char reason[200];

        for (size_t i = 0; i < PERF_GROUP_EVENTS_MAX + 1; i++)
                big[i] = event("cpu", 0x3c);
        req = (pmugate_perf_request) { .scope = PMUGATE_PERF_SCOPE_CPU, .groups = groups, .n_groups = 1 };
        assert_int_equal(perf_request_check(&req, reason, sizeof(reason)), -EINVAL);
        assert_non_null(strstr(reason, "needs CPUs"));
        req = (pmugate_perf_request) { .scope = PMUGATE_PERF_SCOPE_CPU, .cpus = cpus, .n_cpus = 1, .pid = 5,
                                       .groups = groups, .n_groups = 1 };
        assert_int_equal(perf_request_check(&req, reason, sizeof(reason)), -EINVAL);
        req = (pmugate_perf_request) { .scope = PMUGATE_PERF_SCOPE_PROCESS, .cpus = cpus, .n_cpus = 1,
                                       .groups = groups, .n_groups = 1 };
        assert_int_equal(perf_request_check(&req, reason, sizeof(reason)), -EINVAL);
        req = (pmugate_perf_request) { .scope = PMUGATE_PERF_SCOPE_PROCESS, .groups = too_big, .n_groups = 1 };
        assert_int_equal(perf_request_check(&req, reason, sizeof(reason)), -E2BIG);
        req = (pmugate_perf_request) { .scope = PMUGATE_PERF_SCOPE_PROCESS, .groups = groups, .n_groups = 0 };
        assert_int_equal(perf_request_check(&req, reason, sizeof(reason)), -EINVAL);
        one[0].pmu[0] = '\0';
        req = (pmugate_perf_request) { .scope = PMUGATE_PERF_SCOPE_PROCESS, .groups = groups, .n_groups = 1 };
        assert_int_equal(perf_request_check(&req, reason, sizeof(reason)), -EINVAL);
        assert_int_equal(pmugate_perf_scope_from_string("job"), PMUGATE_PERF_SCOPE_JOB);
        assert_int_equal(pmugate_perf_scope_from_string("node"), -EINVAL);
}

/* A reply {"rows": [...]} packed from rows of (target, group, status, enabled, running, n values). */
typedef struct TestRow {
        int64_t target, group, status;
        uint64_t enabled, running;
        size_t n;
        uint64_t v[4];
} TestRow;

static void pack_rows(const TestRow *rows, size_t n, msgpack_sbuffer *sb, msgpack_zone *zone, msgpack_object *ret) {
        msgpack_packer pk;
        size_t off = 0;

        msgpack_sbuffer_init(sb);
        msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
        msgpack_pack_map(&pk, 1);
        pack_string(&pk, "rows");
        msgpack_pack_array(&pk, n);
        for (size_t i = 0; i < n; i++) {
                msgpack_pack_array(&pk, _PERF_ROW_FIELDS);
                msgpack_pack_int64(&pk, rows[i].target);
                msgpack_pack_int64(&pk, rows[i].group);
                msgpack_pack_int64(&pk, rows[i].status);
                msgpack_pack_uint64(&pk, rows[i].enabled);
                msgpack_pack_uint64(&pk, rows[i].running);
                msgpack_pack_array(&pk, rows[i].n);
                for (size_t j = 0; j < rows[i].n; j++)
                        msgpack_pack_uint64(&pk, rows[i].v[j]);
        }
        assert_true(msgpack_zone_init(zone, 4096));
        assert_int_equal(msgpack_unpack(sb->data, sb->size, &off, zone, ret), MSGPACK_UNPACK_SUCCESS);
}

static int decode(const TestRow *rows, size_t n, pmugate_perf_row *out, uint64_t *values, size_t *at) {
        static const int64_t targets[] = { 4, 6 };
        static const size_t sizes[] = { 2, 1 };
        PerfRowLayout layout = { targets, 2, sizes, 2 };
        msgpack_sbuffer sb;
        msgpack_zone zone;
        msgpack_object map;
        int r;

        assert_int_equal(perf_layout_values(&layout), 6);
        pack_rows(rows, n, &sb, &zone, &map);
        r = perf_rows_decode(&map, &layout, out, values, at);
        msgpack_zone_destroy(&zone);
        msgpack_sbuffer_destroy(&sb);
        return r;
}

static void test_rows(void **state) {
        TestRow good[] = {
                { 4, 0, 0, 1000, 1000, 2, { 11, 12 } },
                { 4, 1, 0, 1000, 500, 1, { 13 } },
                { 6, 0, 0, 1000, 0, 2, { 0, 0 } },
                { 6, 1, -EIO, 1000, 0, 0, { 0 } },
        };
        pmugate_perf_row rows[4];
        uint64_t values[6];
        size_t at = 0;

        /* two parts, as a long reply comes */
        assert_int_equal(decode(good, 2, rows, values, &at), 0);
        assert_int_equal(at, 2);
        assert_int_equal(decode(good + 2, 2, rows, values, &at), 0);
        assert_int_equal(at, 4);
        assert_int_equal(rows[0].values[1], 12);
        assert_int_equal(rows[1].values[0], 13);
        assert_int_equal(rows[1].time_running, 500);
        assert_int_equal(rows[2].target, 6);
        assert_int_equal(rows[3].status, -EIO);
        assert_int_equal(rows[3].n_values, 1);
        assert_int_equal(rows[3].values[0], 0);
        /* running longer than enabled (two clock reads of a driver): it ran all the time */
        {
                TestRow over[] = { { 4, 0, 0, 10, 11, 2, { 1, 2 } } };
                size_t k = 0;

                assert_int_equal(decode(over, 1, rows, values, &k), 0);
                assert_int_equal(rows[0].time_running, 10);
        }
        at = 4;
        /* past the layout */
        assert_int_equal(decode(good, 1, rows, values, &at), -EBADMSG);
}

static void test_rows_refused(void **state) {
        TestRow bad[][1] = {
                { { 6, 0, 0, 10, 10, 2, { 1, 2 } } },   /* a target out of order */
                { { 4, 1, 0, 10, 10, 1, { 1 } } },      /* a group out of order */
                { { 4, 0, 0, 10, 10, 3, { 1, 2, 3 } } },        /* more values than events */
                { { 4, 0, 0, 10, 10, 1, { 1 } } },      /* fewer values without an error */
                { { 4, 0, 5, 10, 10, 2, { 1, 2 } } },   /* a positive status */
        };
        pmugate_perf_row rows[4];
        uint64_t values[6];

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                size_t at = 0;

                assert_int_equal(decode(bad[i], 1, rows, values, &at), -EBADMSG);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_request_process),
                cmocka_unit_test(test_request_thread),
                cmocka_unit_test(test_request_named_job),
                cmocka_unit_test(test_request_cpu),
                cmocka_unit_test(test_request_refused),
                cmocka_unit_test(test_rows),
                cmocka_unit_test(test_rows_refused),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
