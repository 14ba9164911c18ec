/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A shared library with known functions, whose addresses test_timing_symbols.c names
 */
#include "known-lib.h"

int timing_known_lib_beta(int x) {
        int sum = 0;

        for (int i = 0; i < x; i++)
                sum += i * x;
        return sum;
}
