/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The state directory (<runtime-dir>/state): files that outlive one run of the daemon (lease
 * journals, job grants). Every file in it is opened relative to the directory's fd, never
 * through a symlink, and read back as hostile input: whoever could write the directory
 * (the daemon's own user, after its privileges dropped) could have planted it. Records are
 * lines sealed with a checksum, so a record that was not completely written is recognised.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

/* "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as /proc/sys/kernel/random/boot_id holds it */
#define STATE_BOOT_ID_LEN 36U

#define STATE_GRANTS_NAME "grants"
#define STATE_JOURNAL_PREFIX "lease-cpu"

typedef struct StateDir {
        int fd;                                 /* O_DIRECTORY fd of <runtime-dir>/state */
        char boot_id[STATE_BOOT_ID_LEN + 1];    /* the running kernel's, recorded in every file */
} StateDir;

/* Reads the kernel's boot id from <root>/proc/sys/kernel/random/boot_id. Logs and fails when
 * it cannot be read or is not a boot id. */
int state_boot_id_read(const char *root, char ret[STATE_BOOT_ID_LEN + 1]);
bool state_boot_id_valid(const char *s, size_t len);

/* Whether s (len bytes) is a job id or role name: 1 to max letters, digits and . _ - +, the
 * characters the protocol allows in a job id. */
bool state_name_valid(const char *s, size_t len, size_t max);

/* Whether name is one of the daemon's own files: the grants file or a lease journal. */
bool state_name_is_ours(const char *name);

/* Reads name from the state directory, at most size_max bytes, into a NUL-terminated buffer.
 * Only a regular file with one link, owned by the daemon's current user, is read; the file is
 * opened without following a symlink and without blocking (a FIFO), and is checked with fstat
 * before it is read. Returns 0, -ENOENT when there is no such file, or another negative errno
 * with ret_reason saying what is wrong ("is a symbolic link", "is owned by uid 4242", ...).
 * ret_data and ret_size are set only on success. */
int state_file_read(const StateDir *d, const char *name, size_t size_max, char **ret_data, size_t *ret_size,
                    char *ret_reason, size_t reason_size);

/* Creates name afresh (an existing file of that name is removed first, never written through)
 * and returns its fd, opened for writing. ret_replaced, when given, says whether a file was
 * removed. */
int state_file_create(const StateDir *d, const char *name, bool *ret_replaced);

/* Replaces name with data: written to name.tmp (created with O_EXCL, never through a
 * symlink), fsync'ed, renamed over name, and the directory fsync'ed. A crash leaves the old
 * file or the new one. */
int state_file_replace(const StateDir *d, const char *name, const char *data, size_t size);

/* Writes all of data to fd and fdatasync()s it. */
int state_write_synced(int fd, const char *data, size_t size);

/* Calls fn for every entry of the directory but "." and "..", until fn returns a negative
 * errno, which is returned. */
typedef int (*StateDirFn)(int dir_fd, const char *name, void *userdata);
int state_dir_foreach(int dir_fd, StateDirFn fn, void *userdata);

/* CRC-32 (IEEE 802.3, as zlib computes it). */
uint32_t state_crc32(const void *data, size_t size);

/* A record is one line: its text, then " crc=" and the CRC-32 of the text in 8 lower-case hex
 * digits, then '\n'. The checksum finds a record that was cut short or damaged; it does not
 * authenticate anything: whoever can write the file can compute it. */
#define STATE_SEAL_LEN (sizeof(" crc=12345678\n") - 1)

/* Formats a sealed record into buf. Returns its length, or -ENOBUFS when it does not fit. */
_printf_(3, 4) int state_record_format(char *buf, size_t size, const char *fmt, ...);

/* A growing buffer of sealed records, at most max bytes long. The first failure sticks:
 * -ENOMEM, or -EFBIG when the records would pass max. */
typedef struct StateBuffer {
        char *data;
        size_t size;
        size_t allocated;
        size_t max;
        int error;
} StateBuffer;

_printf_(2, 3) void state_buffer_record(StateBuffer *b, const char *fmt, ...);
void state_buffer_done(StateBuffer *b);

typedef enum StateRecordStatus {
        STATE_RECORD_OK,
        STATE_RECORD_TORN,              /* the last line has no newline: its write did not finish */
        STATE_RECORD_BAD_CHECKSUM,      /* no seal, or a seal that does not match the text */
} StateRecordStatus;

/* What is wrong with a record, as a predicate: "does not match its checksum". */
const char *state_record_status_to_string(StateRecordStatus s);

typedef struct StateRecord {
        const char *text;       /* the record without its seal; not NUL-terminated */
        size_t len;
        unsigned lineno;
        StateRecordStatus status;
} StateRecord;

/* Takes the next line off the buffer [*data, *data + *size). Returns false at its end. */
bool state_record_next(const char **data, size_t *size, unsigned *lineno, StateRecord *ret);

/* A record's text split at single spaces. */
typedef struct StateToken {
        const char *p;
        size_t len;
} StateToken;

/* Splits text into at most max tokens. Returns the number of tokens, or -EINVAL when there
 * are more, an empty token (two spaces, a leading or trailing space) or a byte that is not
 * printable ASCII. */
int state_tokens_split(const char *text, size_t len, StateToken *tokens, size_t max);

bool state_token_is(const StateToken *t, const char *s);
/* "key=value": the value, when t starts with key and '='. */
bool state_token_value(const StateToken *t, const char *key, StateToken *ret_value);
/* Canonical decimal (no sign, no leading zero) of at most max; ret untouched on failure. */
bool state_token_decimal(const StateToken *t, uint64_t max, uint64_t *ret);
/* "0x" and 1 to digits_max lower- or upper-case hex digits. */
bool state_token_hex(const StateToken *t, unsigned digits_max, uint64_t *ret);
