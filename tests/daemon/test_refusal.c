/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: refusals, what every check returns when a request may not be served
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>

#include "error.h"
#include "refusal.h"

static void test_refuse_returns_its_code(void **state) {
        Refusal r;

        (void) state;
        refusal_clear(&r);
        assert_int_equal(r.code, 0);
        assert_int_equal(r.op_index, -1);
        assert_string_equal(r.reason, "");
        assert_int_equal(refuse(&r, PROTO_E_NO_SUCH_CPU, 7, "op %d: CPU %u is offline", 7, 3U), PROTO_E_NO_SUCH_CPU);
        assert_int_equal(r.code, PROTO_E_NO_SUCH_CPU);
        assert_int_equal(r.op_index, 7);
        assert_string_equal(r.reason, "op 7: CPU 3 is offline");
        assert_string_equal(r.cpus, "");
        assert_string_equal(r.audit_reason, "");
}

static void test_reason_fits_the_public_field(void **state) {
        char long_text[2 * PMUGATE_REASON_MAX];
        Refusal r;

        (void) state;
        memset(long_text, 'x', sizeof(long_text) - 1);
        long_text[sizeof(long_text) - 1] = '\0';
        refusal_clear(&r);
        assert_int_equal(refuse(&r, PROTO_E_INTERNAL, -1, "%s", long_text), PROTO_E_INTERNAL);
        assert_int_equal(strlen(r.reason), PMUGATE_REASON_MAX - 1);
        assert_int_equal(sizeof(r.reason), PMUGATE_REASON_MAX);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_refuse_returns_its_code),
                cmocka_unit_test(test_reason_fits_the_public_field),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
