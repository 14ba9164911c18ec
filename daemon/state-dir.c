/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * State directory files: safe opening, bounded reading, atomic replacement, sealed records
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "state-dir.h"

bool state_boot_id_valid(const char *s, size_t len) {
        if (len != STATE_BOOT_ID_LEN)
                return false;
        for (size_t i = 0; i < len; i++) {
                bool dash = i == 8 || i == 13 || i == 18 || i == 23;

                if (dash ? s[i] != '-' : !((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        }
        return true;
}

int state_boot_id_read(const char *root, char ret[STATE_BOOT_ID_LEN + 1]) {
        _cleanup_close_ int fd = -EBADF;
        char path[4096], buf[STATE_BOOT_ID_LEN + 2];
        ssize_t n;

        (void) snprintf(path, sizeof(path), "%s/proc/sys/kernel/random/boot_id",
                        strcmp(root, "/") == 0 ? "" : root);
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return log_error_errno(errno, "Cannot read the boot id from %s (it tells journals and "
                                       "grants of this boot from older ones)", path);
        n = read(fd, buf, sizeof(buf));
        if (n < 0)
                return log_error_errno(errno, "Cannot read the boot id from %s", path);
        if (n == STATE_BOOT_ID_LEN + 1 && buf[STATE_BOOT_ID_LEN] == '\n')
                n--;
        if (!state_boot_id_valid(buf, (size_t) n))
                return log_error_errno(EINVAL, "%s does not hold a boot id", path);
        memcpy(ret, buf, STATE_BOOT_ID_LEN);
        ret[STATE_BOOT_ID_LEN] = '\0';
        return 0;
}

bool state_name_valid(const char *s, size_t len, size_t max) {
        if (len == 0 || len > max)
                return false;
        for (size_t i = 0; i < len; i++) {
                char c = s[i];

                if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '-' || c == '+'))
                        return false;
        }
        return true;
}

bool state_name_is_ours(const char *name) {
        return strcmp(name, STATE_GRANTS_NAME) == 0 ||
               strncmp(name, STATE_JOURNAL_PREFIX, strlen(STATE_JOURNAL_PREFIX)) == 0;
}

_printf_(4, 5) static int refuse(char *reason, size_t size, int error, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        (void) vsnprintf(reason, size, fmt, ap);
        va_end(ap);
        return error;
}

/* The uid the daemon acts as on files: its file system uid, which is the daemon's user's also
 * while root recovers the state at start-up (privileges_prepare_state_dir()). setfsuid() with
 * an invalid uid changes nothing and returns the current one. */
static uid_t state_file_owner(void) {
        return (uid_t) setfsuid((uid_t) -1);
}

/* What makes a file unfit to be read; 0 when it is fit. */
static int check_stat(const struct stat *st, size_t size_max, char *reason, size_t size) {
        if (S_ISLNK(st->st_mode))
                return refuse(reason, size, -ELOOP, "is a symbolic link");
        if (S_ISDIR(st->st_mode))
                return refuse(reason, size, -EISDIR, "is a directory");
        if (!S_ISREG(st->st_mode))
                return refuse(reason, size, -EINVAL, "is not a regular file (mode %06o)",
                              (unsigned) st->st_mode);
        if (st->st_nlink != 1)
                return refuse(reason, size, -EMLINK, "has %lu hard links, not 1",
                              (unsigned long) st->st_nlink);
        if (st->st_uid != state_file_owner())
                return refuse(reason, size, -EPERM, "is owned by uid %u, not by the daemon (uid %u)",
                              (unsigned) st->st_uid, (unsigned) state_file_owner());
        if (st->st_size < 0 || (uint64_t) st->st_size > size_max)
                return refuse(reason, size, -EFBIG, "is %lld bytes long, more than the %zu allowed",
                              (long long) st->st_size, size_max);
        return 0;
}

int state_file_read(const StateDir *d, const char *name, size_t size_max, char **ret_data, size_t *ret_size,
                    char *ret_reason, size_t reason_size) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *data = NULL;
        struct stat before, st;
        size_t n = 0;
        int r;

        /* Checked before it is opened, so that nothing unfit is opened at all, and again after,
         * in case the name was replaced in between. */
        if (fstatat(d->fd, name, &before, AT_SYMLINK_NOFOLLOW) < 0) {
                if (errno == ENOENT)
                        return -ENOENT;
                r = -errno;
                (void) snprintf(ret_reason, reason_size, "cannot be inspected: %s", strerror(-r));
                return r;
        }
        r = check_stat(&before, size_max, ret_reason, reason_size);
        if (r < 0)
                return r;
        fd = openat(d->fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0) {
                r = -errno;
                if (r == -ELOOP)
                        (void) snprintf(ret_reason, reason_size, "is a symbolic link");
                else
                        (void) snprintf(ret_reason, reason_size, "cannot be opened: %s", strerror(-r));
                return r == -ENOENT ? -ESTALE : r;
        }
        if (fstat(fd, &st) < 0) {
                r = -errno;
                (void) snprintf(ret_reason, reason_size, "cannot be inspected: %s", strerror(-r));
                return r;
        }
        r = check_stat(&st, size_max, ret_reason, reason_size);
        if (r < 0)
                return r;
        if (st.st_dev != before.st_dev || st.st_ino != before.st_ino) {
                (void) snprintf(ret_reason, reason_size, "was replaced while it was opened");
                return -ESTALE;
        }
        data = malloc(size_max + 1);
        if (!data)
                return -ENOMEM;
        /* The size fstat() saw is not trusted: the file may grow while it is read. */
        for (;;) {
                ssize_t k = read(fd, data + n, size_max + 1 - n);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0) {
                        r = -errno;
                        (void) snprintf(ret_reason, reason_size, "cannot be read: %s", strerror(-r));
                        return r;
                }
                if (k == 0)
                        break;
                n += (size_t) k;
                if (n > size_max) {
                        (void) snprintf(ret_reason, reason_size,
                                        "grew past the %zu bytes allowed while it was read", size_max);
                        return -EFBIG;
                }
        }
        data[n] = '\0';
        *ret_data = TAKE_PTR(data);
        *ret_size = n;
        return 0;
}

int state_write_synced(int fd, const char *data, size_t size) {
        while (size > 0) {
                ssize_t k = write(fd, data, size);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        return -EIO;
                data += k;
                size -= (size_t) k;
        }
        if (fdatasync(fd) < 0)
                return -errno;
        return 0;
}

int state_file_create(const StateDir *d, const char *name, bool *ret_replaced) {
        bool replaced = false;
        int fd;

        /* An old file of that name, or whatever was put there under it, is never opened:
         * its name goes, and O_EXCL makes a new inode that only the daemon has written. */
        if (unlinkat(d->fd, name, 0) == 0)
                replaced = true;
        else if (errno != ENOENT)
                return -errno;
        fd = openat(d->fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        if (ret_replaced)
                *ret_replaced = replaced;
        return fd;
}

int state_file_replace(const StateDir *d, const char *name, const char *data, size_t size) {
        _cleanup_close_ int fd = -EBADF;
        char tmp[256];
        int r;

        if (snprintf(tmp, sizeof(tmp), "%s.tmp", name) >= (int) sizeof(tmp))
                return -ENAMETOOLONG;
        fd = state_file_create(d, tmp, NULL);
        if (fd < 0)
                return fd;
        r = state_write_synced(fd, data, size);
        if (r == 0 && close(TAKE_FD(fd)) < 0)
                r = -errno;
        if (r == 0 && renameat(d->fd, tmp, d->fd, name) < 0)
                r = -errno;
        if (r < 0) {
                (void) unlinkat(d->fd, tmp, 0);
                return r;
        }
        /* The rename is on disk too, not only the new file's contents. */
        if (fsync(d->fd) < 0)
                return -errno;
        return 0;
}

int state_dir_foreach(int dir_fd, StateDirFn fn, void *userdata) {
        _cleanup_close_ int fd = -EBADF;
        struct dirent *de;
        DIR *d;
        int r = 0;

        /* A description of its own: the caller's fd keeps its position for *at() calls. */
        fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        d = fdopendir(fd);
        if (!d)
                return -errno;
        TAKE_FD(fd);
        for (;;) {
                errno = 0;
                de = readdir(d);
                if (!de) {
                        r = errno > 0 ? -errno : 0;
                        break;
                }
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                r = fn(dir_fd, de->d_name, userdata);
                if (r < 0)
                        break;
        }
        closedir(d);
        return r;
}

uint32_t state_crc32(const void *data, size_t size) {
        static uint32_t table[256];
        const uint8_t *p = data;
        uint32_t crc = UINT32_MAX;

        if (table[1] == 0)
                for (uint32_t i = 0; i < 256; i++) {
                        uint32_t c = i;

                        for (unsigned k = 0; k < 8; k++)
                                c = c & 1 ? 0xEDB88320U ^ (c >> 1) : c >> 1;
                        table[i] = c;
                }
        for (size_t i = 0; i < size; i++)
                crc = table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
        return crc ^ UINT32_MAX;
}

static int seal(char *buf, size_t size, size_t len) {
        int k;

        if (len >= size)
                return -ENOBUFS;
        k = snprintf(buf + len, size - len, " crc=%08x\n", state_crc32(buf, len));
        if (k < 0 || (size_t) k >= size - len)
                return -ENOBUFS;
        return (int) (len + (size_t) k);
}

int state_record_format(char *buf, size_t size, const char *fmt, ...) {
        va_list ap;
        int k;

        va_start(ap, fmt);
        k = vsnprintf(buf, size, fmt, ap);
        va_end(ap);
        if (k < 0 || (size_t) k >= size)
                return -ENOBUFS;
        return seal(buf, size, (size_t) k);
}

static int buffer_reserve(StateBuffer *b, size_t need) {
        size_t want = b->allocated * 2;
        char *p;

        if (b->size + need > b->max + 1)
                return -EFBIG;
        if (b->size + need <= b->allocated)
                return 0;
        if (want < b->size + need)
                want = b->size + need;
        if (want > b->max + 1)
                want = b->max + 1;
        p = realloc(b->data, want);
        if (!p)
                return -ENOMEM;
        b->data = p;
        b->allocated = want;
        return 0;
}

void state_buffer_record(StateBuffer *b, const char *fmt, ...) {
        va_list ap;
        int k;

        if (b->error < 0)
                return;
        va_start(ap, fmt);
        k = vsnprintf(NULL, 0, fmt, ap);
        va_end(ap);
        if (k < 0) {
                b->error = -EINVAL;
                return;
        }
        b->error = buffer_reserve(b, (size_t) k + STATE_SEAL_LEN + 1);
        if (b->error < 0)
                return;
        va_start(ap, fmt);
        (void) vsnprintf(b->data + b->size, b->allocated - b->size, fmt, ap);
        va_end(ap);
        k = seal(b->data + b->size, b->allocated - b->size, (size_t) k);
        if (k < 0) {
                b->error = k;
                return;
        }
        b->size += (size_t) k;
        if (b->size > b->max)
                b->error = -EFBIG;
}

void state_buffer_done(StateBuffer *b) {
        free(b->data);
        *b = (StateBuffer) { .max = b->max };
}

const char *state_record_status_to_string(StateRecordStatus s) {
        switch (s) {
        case STATE_RECORD_OK:
                return "ok";
        case STATE_RECORD_TORN:
                return "is incomplete (its write did not finish)";
        case STATE_RECORD_BAD_CHECKSUM:
                return "does not match its checksum";
        }
        return NULL;
}

static bool hex_digit(char c, bool upper_too, unsigned *ret) {
        if (c >= '0' && c <= '9')
                *ret = (unsigned) (c - '0');
        else if (c >= 'a' && c <= 'f')
                *ret = (unsigned) (c - 'a' + 10);
        else if (upper_too && c >= 'A' && c <= 'F')
                *ret = (unsigned) (c - 'A' + 10);
        else
                return false;
        return true;
}

/* Whether line ends in a seal matching the text before it; the text's length in ret_len. */
static bool unseal(const char *line, size_t len, size_t *ret_len) {
        const size_t seal_len = STATE_SEAL_LEN - 1; /* no newline here */
        uint32_t want = 0;
        const char *s;

        if (len < seal_len)
                return false;
        s = line + len - seal_len;
        if (memcmp(s, " crc=", 5) != 0)
                return false;
        for (unsigned i = 5; i < seal_len; i++) {
                unsigned v;

                if (!hex_digit(s[i], false, &v))
                        return false;
                want = want << 4 | v;
        }
        if (state_crc32(line, len - seal_len) != want)
                return false;
        *ret_len = len - seal_len;
        return true;
}

bool state_record_next(const char **data, size_t *size, unsigned *lineno, StateRecord *ret) {
        const char *line = *data, *nl;
        size_t len, text_len = 0;

        if (*size == 0)
                return false;
        nl = memchr(line, '\n', *size);
        len = nl ? (size_t) (nl - line) : *size;
        *data += nl ? len + 1 : len;
        *size -= nl ? len + 1 : len;
        (*lineno)++;
        *ret = (StateRecord) { .text = line, .len = len, .lineno = *lineno };
        if (!nl)
                ret->status = STATE_RECORD_TORN;
        else if (!unseal(line, len, &text_len))
                ret->status = STATE_RECORD_BAD_CHECKSUM;
        else
                ret->len = text_len;
        return true;
}

int state_tokens_split(const char *text, size_t len, StateToken *tokens, size_t max) {
        size_t n = 0, start = 0;

        for (size_t i = 0; i <= len; i++) {
                if (i < len && text[i] != ' ') {
                        if (text[i] < 0x21 || text[i] > 0x7e)
                                return -EINVAL;
                        continue;
                }
                if (i == start || n == max)
                        return -EINVAL;
                tokens[n++] = (StateToken) { .p = text + start, .len = i - start };
                start = i + 1;
        }
        return (int) n;
}

bool state_token_is(const StateToken *t, const char *s) {
        return t->len == strlen(s) && memcmp(t->p, s, t->len) == 0;
}

bool state_token_value(const StateToken *t, const char *key, StateToken *ret_value) {
        size_t k = strlen(key);

        if (t->len <= k || memcmp(t->p, key, k) != 0 || t->p[k] != '=')
                return false;
        *ret_value = (StateToken) { .p = t->p + k + 1, .len = t->len - k - 1 };
        return true;
}

bool state_token_decimal(const StateToken *t, uint64_t max, uint64_t *ret) {
        uint64_t v = 0;

        if (t->len == 0 || t->len > 20 || (t->len > 1 && t->p[0] == '0'))
                return false;
        for (size_t i = 0; i < t->len; i++) {
                unsigned d;

                if (t->p[i] < '0' || t->p[i] > '9')
                        return false;
                d = (unsigned) (t->p[i] - '0');
                if (v > (UINT64_MAX - d) / 10)
                        return false;
                v = v * 10 + d;
        }
        if (v > max)
                return false;
        *ret = v;
        return true;
}

bool state_token_hex(const StateToken *t, unsigned digits_max, uint64_t *ret) {
        uint64_t v = 0;

        if (digits_max > 16)
                digits_max = 16;
        if (t->len < 3 || t->len > 2 + (size_t) digits_max || t->p[0] != '0' || t->p[1] != 'x')
                return false;
        for (size_t i = 2; i < t->len; i++) {
                unsigned d;

                if (!hex_digit(t->p[i], true, &d))
                        return false;
                v = v << 4 | d;
        }
        *ret = v;
        return true;
}
