/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: the grants file as the daemon reads it back at start-up. Whatever it loads is a
 * valid grant of a CPU the machine has, and writes back into a file that loads the same.
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_seal.h"
#include "log.h"
#include "macro.h"
#include "policy/grants.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define BOOT "6b1e8c7a-1f3d-4c55-9a0e-2b7d4e6f8a90"
#define N_CPUS 16U
#define MISSING_CPU 9U
#define GRANTS_LIMIT 8U

static MachineCpu cpus[N_CPUS];
static Machine machine = { .cpus = cpus, .n_cpus = N_CPUS };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *text = NULL, *again = NULL;
        _cleanup_(state_buffer_done) StateBuffer sealed = { .max = PMUGATE_GRANTS_FILE_SIZE_MAX };
        size_t text_size, again_size;
        char reason[256];
        Grants g, back;
        int r;

        log_set_max_level(LOG_CRIT);
        for (uint32_t c = 0; c < N_CPUS; c++)
                cpus[c] = (MachineCpu) { .present = c != MISSING_CPU, .online = true };
        grants_init(&g, NULL, GRANTS_LIMIT);
        grants_init(&back, NULL, GRANTS_LIMIT);
        if (fuzz_seal_lines(&data, &size, &sealed) < 0)
                return 0;

        r = grants_parse(&g, (const char *) data, size, BOOT, &machine, reason, sizeof(reason));
        assert(r >= 0 || r == -EBADMSG || r == -ENOMEM);
        if (r == -EBADMSG)
                assert(g.n == 0);
        assert(g.n <= GRANTS_LIMIT);
        for (size_t i = 0; i < g.n; i++) {
                const Grant *gr = &g.items[i];

                assert(state_name_valid(gr->job, strlen(gr->job), PMUGATE_STRING_MAX));
                assert(grants_uid_valid(gr->uid));
                assert(grants_find(&g, gr->job) == gr);
                assert(gr->has_cpus || cpuset_is_empty(&gr->cpus));
                CPUSET_FOREACH(c, &gr->cpus)
                        assert(c < N_CPUS && c != MISSING_CPU);
        }
        if (r < 0) {
                grants_done(&g);
                return 0;
        }

        /* What was loaded saves into a file that loads the same grants, byte for byte. */
        assert(grants_format(&g, BOOT, &text, &text_size) == 0);
        assert(grants_parse(&back, text, text_size, BOOT, &machine, reason, sizeof(reason)) == 0);
        assert(back.n == g.n);
        assert(grants_format(&back, BOOT, &again, &again_size) == 0);
        assert(again_size == text_size && memcmp(again, text, text_size) == 0);
        grants_done(&g);
        grants_done(&back);
        return 0;
}
