/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libpmugate: what the library's own users of a batch may do beyond the public API
 */
#pragma once

#include "pmugate/pmugate.h"

/* Frees the results of the batch's last run (pmugate_batch_result() then has none) and the room
 * for them; the next run takes room again. A batch kept encoded and run every sample (a
 * measurement's sample batches, one per event set and chunk of CPUs) then holds its results only
 * while they are read: at 4096 CPUs they were megabytes per batch, resident between samples. */
void batch_results_release(pmugate_batch *b);
