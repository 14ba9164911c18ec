/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate timing: choosing and naming what a report shows
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/timing-select.h"
#include "macro.h"

static bool parse_hex(const char *s, uint64_t *ret) {
        char *end;

        if (strncmp(s, "0x", 2) != 0 && strncmp(s, "0X", 2) != 0)
                return false;
        errno = 0;
        *ret = strtoull(s, &end, 16);
        return errno == 0 && end != s + 2 && *end == '\0';
}

/* Whether block b ends at --block's branch: ADDR as the file address objdump shows, the file
 * offset or a run-time address of the recording; SYMBOL as the function the branch is in, and
 * SYMBOL+0xOFF as the branch's place in it. */
static bool block_matches(TimingNamer *namer, const TimingAnalysis *an, const TimingBlock *b,
                          const char *query) {
        const TimingModule *m = timing_analysis_module(an, b->module);
        const char *plus = strrchr(query, '+');
        size_t len = plus ? (size_t) (plus - query) : strlen(query);
        uint64_t addr, offset = 0;
        TimingName end;

        if (parse_hex(query, &addr)) {
                if (b->end == addr || b->address_end == addr)
                        return true;
                timing_namer_offset(namer, m, b->end, &end);
                return end.has_file_address && end.file_start == addr;
        }
        if (plus && !parse_hex(plus + 1, &offset))
                return false;
        timing_namer_offset(namer, m, b->end, &end);
        return end.function[0] && strlen(end.function) == len && strncmp(end.function, query, len) == 0 &&
               (!plus || end.function_offset == offset);
}


static uint64_t tally_hash(const char *name, const char *module) {
        uint64_t h = 1469598103934665603ULL ^ (uint64_t) (uintptr_t) module;

        /* as far as an item keeps it */
        for (size_t i = 0; i < TIMING_SOURCE_MAX - 1 && name[i]; i++)
                h = (h ^ (uint8_t) name[i]) * 1099511628211ULL;
        return h ^ (h >> 29);
}

static int tally_rehash(TimingTally *t) {
        size_t n = t->n_slots ? 2 * t->n_slots : 256;
        uint32_t *slots = calloc(n, sizeof(*slots));

        if (!slots)
                return -ENOMEM;
        for (size_t i = 0; i < t->n; i++) {
                size_t k = tally_hash(t->items[i].name, t->items[i].module) & (n - 1);

                while (slots[k])
                        k = (k + 1) & (n - 1);
                slots[k] = (uint32_t) i + 1;
        }
        free(t->slots);
        t->slots = slots;
        t->n_slots = n;
        return 0;
}

static int tally_add(TimingTally *t, const char *name, const char *function, const char *module,
                     uint64_t samples) {
        size_t k;

        if (2 * (t->n + 1) > t->n_slots && tally_rehash(t) < 0)
                return -ENOMEM;
        for (k = tally_hash(name, module) & (t->n_slots - 1); t->slots[k]; k = (k + 1) & (t->n_slots - 1)) {
                TimingCount *c = &t->items[t->slots[k] - 1];

                if (c->module == module && strncmp(c->name, name, sizeof(c->name) - 1) == 0) {
                        c->samples += samples;
                        return 0;
                }
        }
        if (t->n >= t->allocated) {
                size_t n = t->allocated ? 2 * t->allocated : 64;
                TimingCount *p = reallocarray(t->items, n, sizeof(*p));

                if (!p)
                        return -ENOMEM;
                t->items = p;
                t->allocated = n;
        }
        t->items[t->n] = (TimingCount) { .module = module, .samples = samples };
        (void) snprintf(t->items[t->n].name, sizeof(t->items[t->n].name), "%s", name);
        (void) snprintf(t->items[t->n].function, sizeof(t->items[t->n].function), "%s", function);
        t->slots[k] = (uint32_t) ++t->n;
        return 0;
}

static int compare_counts(const void *x, const void *y) {
        const TimingCount *a = x, *b = y;

        if (a->samples != b->samples)
                return a->samples < b->samples ? 1 : -1;
        return strcmp(a->name, b->name);
}

/* An IP in no function is tallied by its file and offset ("prog+0x1234"), or its address. */
static void unnamed(const TimingModule *m, uint64_t offset, char *buf, size_t size) {
        if (m) {
                const char *slash = strrchr(m->path, '/');

                (void) snprintf(buf, size, "%.200s+0x%" PRIx64, slash ? slash + 1 : m->path, offset);
        } else
                (void) snprintf(buf, size, "0x%" PRIx64, offset);
}

int timing_tally_ips(const TimingAnalysis *an, TimingNamer *namer, TimingTally *functions,
                     TimingTally *lines) {
        for (size_t i = 0; i < timing_analysis_n_ips(an); i++) {
                const TimingIp *ip = timing_analysis_ip(an, i);
                const TimingModule *m = timing_analysis_module(an, ip->module);
                char fallback[TIMING_NAME_MAX];
                TimingName name;
                const char *function;
                int q;

                timing_namer_offset(namer, m, ip->offset, &name);
                unnamed(m, ip->offset, fallback, sizeof(fallback));
                function = name.function[0] ? name.function : fallback;
                q = tally_add(functions, function, "", m ? m->path : NULL, ip->samples);
                if (q >= 0 && name.source[0])
                        q = tally_add(lines, name.source, function, m ? m->path : NULL, ip->samples);
                if (q < 0)
                        return q;
        }
        if (functions->n > 1)
                qsort(functions->items, functions->n, sizeof(TimingCount), compare_counts);
        if (lines->n > 1)
                qsort(lines->items, lines->n, sizeof(TimingCount), compare_counts);
        return 0;
}


void timing_shown_done(TimingShown *s) {
        for (size_t i = 0; s->listings && i < s->n; i++)
                free(s->listings[i]);
        free(s->listings);
        free(s->blocks);
        free(s->names);
}

int timing_choose_blocks(const TimingAnalysis *an, TimingNamer *namer, const char *block, unsigned top,
                         TimingShown *ret) {
        size_t n_all = timing_analysis_n_blocks(an);
        TimingShown s = {};

        s.blocks = calloc(MAX(n_all, (size_t) 1), sizeof(*s.blocks));
        if (!s.blocks)
                return -ENOMEM;
        for (size_t i = 0; i < n_all; i++) {
                const TimingBlock *b = timing_analysis_block(an, i);

                if (block ? block_matches(namer, an, b, block) : s.n < top)
                        s.blocks[s.n++] = b;
        }
        s.names = calloc(MAX(s.n, (size_t) 1), sizeof(*s.names));
        if (!s.names) {
                timing_shown_done(&s);
                return -ENOMEM;
        }
        for (size_t i = 0; i < s.n; i++)
                timing_namer_block(namer, timing_analysis_module(an, s.blocks[i]->module), s.blocks[i],
                                   &s.names[i]);
        if (block) {
                s.listings = calloc(MAX(s.n, (size_t) 1), sizeof(char *));
                if (!s.listings) {
                        timing_shown_done(&s);
                        return -ENOMEM;
                }
                for (size_t i = 0; i < s.n; i++)
                        if (timing_namer_listing(namer, timing_analysis_module(an, s.blocks[i]->module),
                                                 s.blocks[i], &s.listings[i]) < 0) {
                                timing_shown_done(&s);
                                return -ENOMEM;
                        }
        }
        *ret = s;
        return 0;
}

void timing_tally_done(TimingTally *t) {
        free(t->items);
        free(t->slots);
        *t = (TimingTally) {};
}
