/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reading one `pmugate timing` ring buffer: the metadata page and TIMING_RING_DATA_BYTES of
 * records after it, mapped from a handed-off event fd (the kernel's, or the simulator's
 * memfd in the same layout). The producer writes data_head; the reader consumes records up to
 * it and then publishes data_tail, so the producer may reuse the space. data_offset,
 * data_size and every record's size are the producer's word, checked before use.
 */
#pragma once

#include <stdint.h>

#include "timing/timing-record.h"

typedef struct TimingRing TimingRing;

/* Maps the ring of fd (one metadata page and TIMING_RING_DATA_BYTES). Returns 0 or a negative
 * errno (-EBADMSG: the metadata page describes no ring of that size). */
int timing_ring_map(int fd, uint64_t sample_type, TimingRing **ret);

/* Calls on_record for each complete record between the tail and the head in order, then
 * publishes the new tail. A record that does not decode is counted in *ret_malformed (when
 * not NULL; set on every return but -EINVAL) and skipped by its header's size; a header whose
 * size is below a header's or runs past the head ends the drain with -EBADMSG (the rest of
 * the ring cannot be framed), as does a head more than the ring's size ahead of the tail (or
 * behind it): either way the tail moves to that head, so that the ring flows again and the
 * next drain reads what the producer writes next. on_record returning a negative errno stops
 * the drain with it (that record consumed). The record passed lives until the next drain.
 * Returns the number of records delivered. */
int timing_ring_drain(TimingRing *r, int (*on_record)(const TimingRecord *rec, void *userdata),
                      void *userdata, uint64_t *ret_malformed);

/* NULL-safe; returns NULL. */
TimingRing *timing_ring_unmap(TimingRing *r);
