/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reload: pmugate.conf read anew (pmugatectl reload, or SIGHUP from systemctl reload), every
 * open connection's groups re-read from the group database and its rights recomputed, and
 * every lease the new rights no longer allow ended with a restore. The allowlists are not
 * reloaded: they decided which PCI devices were opened as root at start-up, and the daemon
 * can no longer open others; a new allowlist takes a restart.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <systemd/sd-daemon.h>
#include <time.h>

#include "log.h"
#include "macro.h"
#include "policy/membership.h"
#include "server/reload.h"
#include "server/revalidate.h"
#include "server/server-state.h"

static bool uid_seen_before(const Server *s, const Session *c) {
        for (const Session *o = s->sessions; o != c; o = o->next)
                if (o->peer.uid == c->peer.uid)
                        return true;
        return false;
}

/* The groups of uid's connections narrowed to what the database says now, asked once per uid.
 * A uid the database does not know is in no group; one it cannot answer for keeps no group
 * right either (fail closed: a reconnect gets the kernel's word again), with a warning naming
 * the cause. */
static void narrow_uid_groups(Server *s, uid_t uid) {
        _cleanup_free_ gid_t *gids = NULL;
        size_t n = 0;
        int r;

        r = membership_read(s->root, uid, &gids, &n);
        if (r < 0)
                log_warning_errno(r, "Cannot read the group database for uid %u: its open connections keep no "
                                  "group rights until they reconnect", (unsigned) uid);
        for (Session *c = s->sessions; c; c = c->next) {
                size_t lost;

                if (c->peer.uid != uid)
                        continue;
                lost = peer_narrow_groups(&c->peer, r < 0 ? NULL : gids, r < 0 ? 0 : n);
                if (lost > 0)
                        log_info("Connection of uid %u pid %d loses %zu of the groups it connected with: the "
                                 "group database %s", (unsigned) uid, (int) c->peer.pid, lost,
                                 r == MEMBERSHIP_E_NO_USER ? "has no such user" :
                                 r < 0 ? "could not be read" : "no longer lists it as a member");
        }
}

int server_reload(Server *s, const ReloadCaller *caller, char *reason, size_t size) {
        AuditRecord rec = { .event = "reload", .uid = caller->uid, .gid = caller->gid, .pid = caller->pid };
        Config config;
        int r;

        r = config_load(s->config_path, false, s->config_owner, &config, reason, size);
        if (r < 0) {
                rec.verdict = "refused";
                rec.reason = reason;
                audit_emit(s->audit, &rec);
                log_warning("Configuration reload (%s) refused, the old policy stays in force: %s", caller->via,
                            reason);
                return r;
        }
        /* The backend was chosen at start-up, with devices opened as root: it stays. */
        if (config.counters_backend != s->config.counters_backend)
                log_notice("Configuration reload: backend = %s in [counters] takes effect at the next "
                           "start; counters stay via %s%s", backend_wanted_to_string(config.counters_backend),
                           backend_counters_to_string(s->choice.counters),
                           s->counters_from_option ? " (and --counters wins over the file)" : "");
        s->config = config;
        s->grants.max = config.grants_max;
        /* Root is admin whatever its groups. */
        for (Session *c = s->sessions; c; c = c->next)
                if (c->peer.uid != 0 && !uid_seen_before(s, c))
                        narrow_uid_groups(s, c->peer.uid);
        for (Session *c = s->sessions; c; c = c->next)
                policy_rights(&s->config, &c->peer, &c->rights);
        /* Rights changed: a batch in progress checks its remaining slices again. */
        s->rights_generation++;
        rec.verdict = "allowed";
        rec.reason = s->config_path;
        audit_emit(s->audit, &rec);
        /* A role the new policy demotes, a group the user left, or a switch to job mode takes
         * the leases with it. */
        (void) server_revalidate_leases(s, "the configuration was reloaded");
        log_info("Configuration reloaded from %s (mode %s, %s)", s->config_path, access_mode_to_string(config.mode),
                 caller->via);
        return 0;
}

int server_on_sighup(sd_event_source *source, const struct signalfd_siginfo *si, void *userdata) {
        ReloadCaller caller = { .uid = si->ssi_uid, .gid = (gid_t) -1, .pid = (pid_t) si->ssi_pid, .via = "SIGHUP" };
        Server *s = userdata;
        struct timespec ts;
        char reason[400];
        int r;

        /* systemd waits for READY=1 after RELOADING=1 (with the time, for Type=notify-reload). */
        if (clock_gettime(CLOCK_MONOTONIC, &ts) == 0)
                (void) sd_notifyf(false, "RELOADING=1\nSTATUS=Reloading the configuration\nMONOTONIC_USEC=%llu",
                                  (unsigned long long) ts.tv_sec * 1000000ULL +
                                          (unsigned long long) ts.tv_nsec / 1000ULL);
        r = server_reload(s, &caller, reason, sizeof(reason));
        if (r < 0)
                (void) sd_notifyf(false, "READY=1\nSTATUS=Serving; the reloaded configuration was refused, the "
                                  "old one stays: %s", reason);
        else
                (void) sd_notifyf(false, "READY=1\nSTATUS=Serving; configuration reloaded (mode %s)",
                                  access_mode_to_string(s->config.mode));
        return 0;
}
