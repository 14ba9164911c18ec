/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A fake daemon for client unit tests: a SEQPACKET socket of the test's own that libpmugate
 * connects to, with replies queued before each call (the client sends, then reads them; the
 * fake never reads requests). A reply may carry fds of /dev/null in SCM_RIGHTS.
 */
#pragma once

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <dirent.h>
#include <fcntl.h>
#include <msgpack.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "message-pack.h"
#include "pmugate/pmugate.h"

typedef struct FakeDaemon {
        char dir[64];
        char path[108];
        int listen_fd;
        int fd;                 /* the accepted connection */
} FakeDaemon;

static inline size_t open_fds(void) {
        DIR *d = opendir("/proc/self/fd");
        size_t n = 0;

        assert_non_null(d);
        while (readdir(d))
                n++;
        closedir(d);
        return n;
}

static inline pmugate *fake_connect(FakeDaemon *f) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        pmugate *c = NULL;

        (void) snprintf(f->dir, sizeof(f->dir), "/tmp/pmugate-handoff-XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        (void) snprintf(f->path, sizeof(f->path), "%s/s", f->dir);
        (void) snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", f->path);
        f->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        assert_true(f->listen_fd >= 0);
        assert_int_equal(bind(f->listen_fd, (struct sockaddr *) &sa, sizeof(sa)), 0);
        assert_int_equal(listen(f->listen_fd, 1), 0);
        assert_int_equal(pmugate_connect(f->path, &c), 0);
        f->fd = accept4(f->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        assert_true(f->fd >= 0);
        return c;
}

static inline void fake_done(FakeDaemon *f) {
        close(f->fd);
        close(f->listen_fd);
        unlink(f->path);
        rmdir(f->dir);
}

/* Queues one reply (the map packed by body, after v, id, ok) with n_fds fds of /dev/null. */
static inline void fake_reply(FakeDaemon *f, uint64_t id, size_t extra_keys, void (*body)(msgpack_packer *pk),
                       size_t n_fds) {
        union {
                struct cmsghdr align;
                char buf[CMSG_SPACE(8 * sizeof(int))];
        } control = {};
        msgpack_sbuffer sb;
        msgpack_packer pk;
        int fds[8];
        struct iovec iov;
        struct msghdr mh = {};

        msgpack_sbuffer_init(&sb);
        msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
        assert_int_equal(reply_pack_begin(&pk, id, extra_keys), 0);
        body(&pk);
        iov = (struct iovec) { .iov_base = sb.data, .iov_len = sb.size };
        mh.msg_iov = &iov;
        mh.msg_iovlen = 1;
        if (n_fds > 0) {
                struct cmsghdr *cm;

                for (size_t i = 0; i < n_fds; i++) {
                        fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
                        assert_true(fds[i] >= 0);
                }
                mh.msg_control = control.buf;
                mh.msg_controllen = CMSG_SPACE(n_fds * sizeof(int));
                cm = CMSG_FIRSTHDR(&mh);
                cm->cmsg_level = SOL_SOCKET;
                cm->cmsg_type = SCM_RIGHTS;
                cm->cmsg_len = CMSG_LEN(n_fds * sizeof(int));
                memcpy(CMSG_DATA(cm), fds, n_fds * sizeof(int));
        }
        assert_int_equal(sendmsg(f->fd, &mh, 0), (ssize_t) sb.size);
        for (size_t i = 0; i < n_fds; i++)
                close(fds[i]);
        msgpack_sbuffer_destroy(&sb);
}

