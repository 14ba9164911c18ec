/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The known shared library's functions (timing/known-lib.c)
 */
#pragma once

/* The line its definition starts on in known-lib.c: the test finds its first instruction on
 * one of the function's lines. */
#define TIMING_KNOWN_LIB_BETA_LINE 7

__attribute__((noinline)) int timing_known_lib_beta(int x);
