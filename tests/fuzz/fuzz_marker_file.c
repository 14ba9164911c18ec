/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: the marker results file a measured program writes and `pmugate stat -m` reads
 * back (docs/MARKERS.md)
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "marker/marker-internal.h"
#include "pmugate-limits.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        /* the column count the runner expects comes from the first byte, as if from a group */
        size_t columns = size > 0 ? data[0] % (MARKER_COLUMNS_MAX + 1) : 3;
        char *copy = fuzz_copy(size > 0 ? data + 1 : data, size > 0 ? size - 1 : 0);
        char reason[256] = "";
        MarkerFile *f = NULL;
        int r;

        r = marker_file_parse(copy, size > 0 ? size - 1 : 0, columns, &f, reason, sizeof(reason));
        fuzz_assert(r == 0 || r == -EBADMSG || r == -ECANCELED || r == -ENOMEM);
        fuzz_assert((r == 0) == (f != NULL));
        fuzz_assert(r == 0 || reason[0] != '\0' || r == -ENOMEM);
        if (f) {
                fuzz_assert(f->n_columns == columns);
                fuzz_assert(f->n_regions <= PMUGATE_MARKER_REGIONS_MAX);
                fuzz_assert(f->n_errors <= MARKER_FILE_ERRORS_MAX);
                for (size_t i = 0; i < f->n_regions; i++)
                        fuzz_assert(marker_name_valid(f->regions[i]));
                for (size_t i = 0; i < f->n_rows; i++) {
                        fuzz_assert(f->rows[i].region < f->n_regions);
                        fuzz_assert(f->rows[i].calls > 0 && f->rows[i].migrated <= f->rows[i].calls);
                        fuzz_assert(f->rows[i].cpu >= -1 && f->rows[i].cpu < (int64_t) PMUGATE_CPUS_MAX);
                }
                for (size_t i = 0; i < f->n_errors; i++)
                        fuzz_assert(f->errors[i].count > 0 && strlen(f->errors[i].text) > 0);
        }
        marker_file_free(f);
        free(copy);
        return 0;
}
