/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The simulated backend's stand-in in a -Dsimulator=false build: it says it is absent and
 * refuses, leaving the caller's outputs alone
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "backend/sim/backend-sim.h"

static void test_absent(void **state) {
        Machine *machine = (Machine *) 0x1;
        Backend *backend = (Backend *) 0x2;

        assert_false(backend_sim_built());
        assert_int_equal(backend_sim_new("spr", NULL, &machine, &backend), -EOPNOTSUPP);
        assert_int_equal(backend_sim_new(NULL, "/nonexistent/sim.conf", &machine, &backend), -EOPNOTSUPP);
        assert_ptr_equal(machine, (Machine *) 0x1);
        assert_ptr_equal(backend, (Backend *) 0x2);
        assert_int_equal(backend_sim_advance(NULL, 1000), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_absent),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
