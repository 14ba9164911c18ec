/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Wire format: both halves, for code that writes messages and reads the peer's. The decoder
 * of untrusted requests (request-decode.h) and the packers (message-pack.h) are separate
 * libraries; the vocabulary both use is wire.h.
 */
#pragma once

#include "message-pack.h"
#include "request-decode.h"
