/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libpmugate: hello's package counters
 */
#pragma once

#include <msgpack.h>
#include <stddef.h>

#include "pmugate/pmugate.h"

/* Decodes hello's "counters" into a new array. A reply without the key (an older daemon) gives
 * none; a malformed entry gives -EBADMSG. */
int package_counters_decode(const msgpack_object *reply, pmugate_counter **ret_counters, size_t *ret_n);
