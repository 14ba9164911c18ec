/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Scratch directories for unit tests
 */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "tmpdir_fixture.h"

#define TMPDIR_TEMPLATE "/tmp/pmugate-unit-test-XXXXXX"

char tmpdir[] = TMPDIR_TEMPLATE;

int tmpdir_setup(void **state) {
        (void) state;
        memcpy(tmpdir, TMPDIR_TEMPLATE, sizeof(TMPDIR_TEMPLATE));
        assert_non_null(mkdtemp(tmpdir));
        return 0;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        (void) st;
        (void) flag;
        (void) ftw;
        return remove(path);
}

int tmpdir_teardown(void **state) {
        (void) state;
        return nftw(tmpdir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}
