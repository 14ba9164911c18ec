/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Replays fuzz inputs without libFuzzer: every file named on the command line, or every file in
 * a directory named there, goes through LLVMFuzzerTestOneInput once.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "macro.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        _cleanup_free_ uint8_t *buf = NULL;
        long size;

        if (!f)
                return -errno;
        if (fseek(f, 0, SEEK_END) < 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) < 0)
                return -errno;
        buf = malloc((size_t) size + 1);
        if (!buf)
                return -ENOMEM;
        if (fread(buf, 1, (size_t) size, f) != (size_t) size)
                return -EIO;
        (void) LLVMFuzzerTestOneInput(buf, (size_t) size);
        return 0;
}

int main(int argc, char *argv[]) {
        unsigned replayed = 0;

        for (int i = 1; i < argc; i++) {
                struct stat st;
                DIR *d;
                struct dirent *de;

                if (stat(argv[i], &st) < 0) {
                        fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
                        return EXIT_FAILURE;
                }
                if (!S_ISDIR(st.st_mode)) {
                        if (replay_file(argv[i]) < 0)
                                return EXIT_FAILURE;
                        replayed++;
                        continue;
                }
                d = opendir(argv[i]);
                if (!d)
                        return EXIT_FAILURE;
                while ((de = readdir(d))) {
                        char path[4096];

                        if (de->d_name[0] == '.')
                                continue;
                        (void) snprintf(path, sizeof(path), "%s/%s", argv[i], de->d_name);
                        if (replay_file(path) < 0) {
                                closedir(d);
                                return EXIT_FAILURE;
                        }
                        replayed++;
                }
                closedir(d);
        }
        printf("replayed %u inputs\n", replayed);
        return replayed > 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
