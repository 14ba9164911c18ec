/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A scratch directory per unit test, for tests of code that reads and writes files
 */
#pragma once

/* The directory of the running test: made by tmpdir_setup() and removed, with everything in it,
 * by tmpdir_teardown(), which cmocka runs as the test's setup and teardown. */
extern char tmpdir[];

int tmpdir_setup(void **state);
int tmpdir_teardown(void **state);
