/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The configuration read anew (reload request, SIGHUP).
 */
#pragma once

#include <signal.h>
#include <sys/signalfd.h>
#include <sys/types.h>

#include "server/server-state.h"

/* Who asked for a reload, for the audit record. */
typedef struct ReloadCaller {
        uid_t uid;
        gid_t gid;              /* (gid_t) -1: not known (a signal's sender) */
        pid_t pid;
        const char *via;        /* "reload request", "SIGHUP" */
} ReloadCaller;

/* Reads pmugate.conf anew and applies it: every open connection's groups are narrowed to what
 * the group database says now (never widened), its rights recomputed, and the leases they no
 * longer allow ended with a restore (server_revalidate_leases()). Audited either way. A file
 * that does not load changes nothing: returns its negative errno with reason filled. */
int server_reload(Server *s, const ReloadCaller *caller, char *reason, size_t size);

/* SIGHUP (systemctl reload): server_reload(), framed by RELOADING=1 and READY=1. */
int server_on_sighup(sd_event_source *source, const struct signalfd_siginfo *si, void *userdata);
