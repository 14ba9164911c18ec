/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate timing's analysis: blocks from branch stacks, their cycle statistics and histograms,
 * and sampled IPs, keyed by file and offset
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "pmugate-limits.h"
#include "timing/timing-blocks.h"

/* An executable mapping of a process: run-time [start, start + len) is file offset pgoff on. */
typedef struct Mapping {
        uint32_t pid;
        uint32_t module;
        uint64_t start, len, pgoff;
        bool shadowed;                  /* a newer mapping of pid overlaps it */
} Mapping;

/* Open addressing: slot holds an index + 1 into the blocks or IPs, 0 when free. */
typedef struct Table {
        uint32_t *slots;
        size_t n_slots;                 /* a power of two, at least twice the entries */
} Table;

struct TimingAnalysis {
        TimingModule *modules;
        size_t n_modules;
        Mapping *mappings;
        size_t n_mappings, n_mappings_allocated;
        size_t last_mapping;            /* where the previous lookup hit: most addresses follow it */
        TimingBlock *blocks;
        size_t n_blocks, n_blocks_allocated;
        Table block_table;
        TimingIp *ips;
        size_t n_ips, n_ips_allocated;
        Table ip_table;
        size_t cycles_kept;
        TimingCounters counters;
        bool finished;
};

static uint64_t mix(uint64_t h) {
        h ^= h >> 33;
        h *= 0xff51afd7ed558ccdULL;
        h ^= h >> 33;
        h *= 0xc4ceb9fe1a85ec53ULL;
        return h ^ (h >> 33);
}

static uint64_t key_hash(uint32_t module, uint64_t a, uint64_t b) {
        return mix(mix(a ^ ((uint64_t) module << 32)) ^ b);
}

static int grow(void **array, size_t *allocated, size_t needed, size_t size) {
        size_t n = *allocated ? *allocated : 16;
        void *p;

        if (needed <= *allocated)
                return 0;
        while (n < needed)
                n *= 2;
        p = reallocarray(*array, n, size);
        if (!p)
                return -ENOMEM;
        *array = p;
        *allocated = n;
        return 0;
}

int timing_analysis_new(TimingAnalysis **ret) {
        TimingAnalysis *a = calloc(1, sizeof(*a));

        if (!a)
                return -ENOMEM;
        *ret = a;
        return 0;
}

TimingAnalysis *timing_analysis_free(TimingAnalysis *a) {
        if (!a)
                return NULL;
        for (size_t i = 0; i < a->n_blocks; i++) {
                free(a->blocks[i].cycles);
                timing_stats_done(&a->blocks[i].stats);
        }
        free(a->blocks);
        free(a->block_table.slots);
        free(a->ips);
        free(a->ip_table.slots);
        free(a->mappings);
        free(a->modules);
        free(a);
        return NULL;
}

static int module_of(TimingAnalysis *a, const TimingMapping *m, uint32_t *ret) {
        TimingModule *p;

        for (size_t i = 0; i < a->n_modules; i++)
                if (a->modules[i].maj == m->maj && a->modules[i].min == m->min &&
                    a->modules[i].ino == m->ino && strcmp(a->modules[i].path, m->path) == 0) {
                        *ret = (uint32_t) i;
                        return 0;
                }
        if (a->n_modules >= TIMING_MODULES_MAX)
                return -E2BIG;
        p = reallocarray(a->modules, a->n_modules + 1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        a->modules = p;
        p = &a->modules[a->n_modules];
        *p = (TimingModule) { .maj = m->maj, .min = m->min, .ino = m->ino, .first = *m };
        /* the decoder ends it with a NUL; a caller's copy may not */
        memcpy(p->path, m->path, sizeof(p->path));
        p->path[sizeof(p->path) - 1] = '\0';
        p->first.path[sizeof(p->first.path) - 1] = '\0';
        *ret = (uint32_t) a->n_modules++;
        return 0;
}

/* Appends m; with shadow, marks the older mappings of its pid that it overlaps (a fork's copies
 * overlap nothing of the child's). */
static int push_mapping(TimingAnalysis *a, const Mapping *m, bool shadow) {
        int r;

        if (a->n_mappings >= TIMING_ANALYSIS_MAPPINGS_MAX) {
                a->counters.mappings_dropped++;
                return 0;
        }
        r = grow((void **) &a->mappings, &a->n_mappings_allocated, a->n_mappings + 1, sizeof(Mapping));
        if (r < 0)
                return r;
        for (size_t i = 0; shadow && i < a->n_mappings; i++) {
                Mapping *o = &a->mappings[i];

                if (o->pid == m->pid && o->start < m->start + m->len && m->start < o->start + o->len)
                        o->shadowed = true;
        }
        a->mappings[a->n_mappings] = *m;
        if (shadow)
                a->mappings[a->n_mappings].shadowed = false;
        a->n_mappings++;
        a->counters.mappings++;
        return 0;
}

int timing_analysis_add_mapping(TimingAnalysis *a, const TimingMapping *m) {
        Mapping map = { .pid = m->pid, .start = m->start, .len = m->len, .pgoff = m->pgoff };
        int r;

        if (m->len == 0 || m->start + m->len < m->start)
                return 0;
        r = module_of(a, m, &map.module);
        if (r == -E2BIG) {
                a->counters.mappings_dropped++;
                return 0;
        }
        if (r < 0)
                return r;
        return push_mapping(a, &map, /* shadow= */ true);
}

int timing_analysis_add_fork(TimingAnalysis *a, uint32_t parent_pid, uint32_t child_pid) {
        size_t n = a->n_mappings;

        if (parent_pid == child_pid)
                return 0;
        for (size_t i = 0; i < n; i++)
                if (a->mappings[i].pid == parent_pid) {
                        Mapping m = a->mappings[i];
                        int r;

                        m.pid = child_pid;
                        r = push_mapping(a, &m, /* shadow= */ false);
                        if (r < 0)
                                return r;
                }
        return 0;
}

static bool mapping_has(const Mapping *m, uint32_t pid, uint64_t address) {
        return m->pid == pid && address >= m->start && address - m->start < m->len;
}

/* The newest mapping of pid holding address (a later mapping replaces what it overlaps), or
 * NULL. */
static const Mapping *mapping_find(TimingAnalysis *a, uint32_t pid, uint64_t address) {
        /* the previous answer stands unless a newer mapping overlaps it */
        if (a->last_mapping < a->n_mappings && !a->mappings[a->last_mapping].shadowed &&
            mapping_has(&a->mappings[a->last_mapping], pid, address))
                return &a->mappings[a->last_mapping];
        for (size_t i = a->n_mappings; i > 0; i--)
                if (mapping_has(&a->mappings[i - 1], pid, address)) {
                        a->last_mapping = i - 1;
                        return &a->mappings[i - 1];
                }
        return NULL;
}

static uint64_t file_offset(const Mapping *m, uint64_t address) {
        return address - m->start + m->pgoff;
}

static int table_grow(Table *t, size_t entries, uint64_t (*hash_of)(const void *items, size_t i),
                      const void *items) {
        uint32_t *slots;
        size_t n;

        if (t->n_slots >= 2 * (entries + 1))
                return 0;
        n = t->n_slots ? t->n_slots * 2 : 64;
        while (n < 2 * (entries + 1))
                n *= 2;
        slots = calloc(n, sizeof(*slots));
        if (!slots)
                return -ENOMEM;
        for (size_t i = 0; i < entries; i++) {
                size_t s = hash_of(items, i) & (n - 1);

                while (slots[s])
                        s = (s + 1) & (n - 1);
                slots[s] = (uint32_t) i + 1;
        }
        free(t->slots);
        t->slots = slots;
        t->n_slots = n;
        return 0;
}

/* Unmapped blocks and IPs are run-time addresses, which mean something only in their process:
 * their key has the pid. */
static uint32_t key_pid(uint32_t module, uint32_t pid) {
        return module == TIMING_MODULE_NONE ? pid : 0;
}

static uint64_t block_key_hash(uint32_t module, uint64_t start, uint64_t end, uint32_t pid) {
        return key_hash(module, start, end ^ ((uint64_t) key_pid(module, pid) << 40));
}

static uint64_t block_hash(const void *items, size_t i) {
        const TimingBlock *b = &((const TimingBlock *) items)[i];

        return block_key_hash(b->module, b->start, b->end, b->pid);
}

static uint64_t ip_hash(const void *items, size_t i) {
        const TimingIp *p = &((const TimingIp *) items)[i];

        return key_hash(p->module, p->offset, key_pid(p->module, p->pid));
}

/* The index of the block of that key, made when new; SIZE_MAX past TIMING_BLOCKS_MAX (counted). */
static int block_get(TimingAnalysis *a, uint32_t module, uint64_t start, uint64_t end, uint32_t pid,
                     size_t *ret) {
        size_t s;
        int r;

        r = table_grow(&a->block_table, a->n_blocks, block_hash, a->blocks);
        if (r < 0)
                return r;
        s = block_key_hash(module, start, end, pid) & (a->block_table.n_slots - 1);
        for (; a->block_table.slots[s]; s = (s + 1) & (a->block_table.n_slots - 1)) {
                TimingBlock *b = &a->blocks[a->block_table.slots[s] - 1];

                if (b->module == module && b->start == start && b->end == end &&
                    key_pid(module, b->pid) == key_pid(module, pid)) {
                        *ret = a->block_table.slots[s] - 1;
                        return 0;
                }
        }
        if (a->n_blocks >= TIMING_BLOCKS_MAX) {
                a->counters.blocks_dropped++;
                *ret = SIZE_MAX;
                return 0;
        }
        r = grow((void **) &a->blocks, &a->n_blocks_allocated, a->n_blocks + 1, sizeof(TimingBlock));
        if (r < 0)
                return r;
        a->blocks[a->n_blocks] = (TimingBlock) { .module = module, .start = start, .end = end, .pid = pid };
        a->block_table.slots[s] = (uint32_t) ++a->n_blocks;
        *ret = a->n_blocks - 1;
        return 0;
}

static int block_add_cycles(TimingAnalysis *a, TimingBlock *b, uint16_t cycles) {
        int r;

        if (a->cycles_kept >= TIMING_CYCLES_KEPT_MAX) {
                a->counters.cycles_dropped++;
                return 0;
        }
        r = grow((void **) &b->cycles, &b->n_cycles_allocated, b->n_cycles + 1, sizeof(uint16_t));
        if (r < 0)
                return r;
        b->cycles[b->n_cycles++] = cycles;
        a->cycles_kept++;
        return 0;
}

/* Where the block [start, end] of pid is: its module and file offsets, or TIMING_MODULE_NONE
 * and the addresses. Returns false for a block across two mappings. */
static bool place(TimingAnalysis *a, uint32_t pid, uint64_t *start, uint64_t *end, uint32_t *ret_module) {
        const Mapping *ms = mapping_find(a, pid, *start), *me;

        me = ms && mapping_has(ms, pid, *end) ? ms : mapping_find(a, pid, *end);
        if (ms != me)
                return false;
        *ret_module = ms ? ms->module : TIMING_MODULE_NONE;
        if (ms) {
                *start = file_offset(ms, *start);
                *end = file_offset(ms, *end);
        }
        return true;
}

static int add_block(TimingAnalysis *a, uint32_t pid, const TimingBranch *newer, const TimingBranch *older) {
        uint64_t start = older->to, end = newer->from;
        uint32_t module;
        TimingBlock *b;
        size_t i;
        int r;

        if (start > end) {
                a->counters.backwards++;
                return 0;
        }
        if (end - start >= TIMING_BLOCK_BYTES_MAX) {
                a->counters.too_long++;
                return 0;
        }
        if (!place(a, pid, &start, &end, &module)) {
                a->counters.across_mappings++;
                return 0;
        }
        r = block_get(a, module, start, end, pid, &i);
        if (r < 0 || i == SIZE_MAX)
                return r;
        b = &a->blocks[i];
        if (b->seen++ == 0) {
                b->address_start = older->to;
                b->address_end = newer->from;
        }
        a->counters.blocks++;
        if (newer->cycles == 0) {
                b->no_cycles++;
                a->counters.no_cycles++;
                return 0;
        }
        return block_add_cycles(a, b, newer->cycles);
}

static int ip_count(TimingAnalysis *a, uint32_t module, uint64_t offset, uint64_t address, uint32_t pid,
                    uint64_t samples) {
        size_t s;
        int r;

        r = table_grow(&a->ip_table, a->n_ips, ip_hash, a->ips);
        if (r < 0)
                return r;
        s = key_hash(module, offset, key_pid(module, pid)) & (a->ip_table.n_slots - 1);
        for (; a->ip_table.slots[s]; s = (s + 1) & (a->ip_table.n_slots - 1)) {
                TimingIp *p = &a->ips[a->ip_table.slots[s] - 1];

                if (p->module == module && p->offset == offset &&
                    key_pid(module, p->pid) == key_pid(module, pid)) {
                        p->samples += samples;
                        return 0;
                }
        }
        if (a->n_ips >= TIMING_BLOCKS_MAX) {
                a->counters.blocks_dropped++;
                return 0;
        }
        r = grow((void **) &a->ips, &a->n_ips_allocated, a->n_ips + 1, sizeof(TimingIp));
        if (r < 0)
                return r;
        a->ips[a->n_ips] = (TimingIp) {
                .module = module, .offset = offset, .address = address, .pid = pid, .samples = samples,
        };
        a->ip_table.slots[s] = (uint32_t) ++a->n_ips;
        return 0;
}

static int add_ip(TimingAnalysis *a, uint32_t pid, uint64_t address) {
        const Mapping *m = mapping_find(a, pid, address);

        return ip_count(a, m ? m->module : TIMING_MODULE_NONE, m ? file_offset(m, address) : address,
                        address, pid, 1);
}

/* A mapping record can come after samples in it: the kernel writes it to the ring of the CPU
 * that mapped, which the client may read a round after another CPU's samples. Blocks and IPs
 * still unmapped at the end are placed again with every mapping known, and merged. */
static int place_late(TimingAnalysis *a) {
        size_t n = a->n_blocks, n_ips = a->n_ips, k;
        int r;

        for (size_t i = 0; i < n; i++) {
                uint64_t start = a->blocks[i].start, end = a->blocks[i].end;
                uint32_t module;
                TimingBlock *from, *to;

                if (a->blocks[i].module != TIMING_MODULE_NONE || a->blocks[i].seen == 0 ||
                    !place(a, a->blocks[i].pid, &start, &end, &module) || module == TIMING_MODULE_NONE)
                        continue;
                r = block_get(a, module, start, end, a->blocks[i].pid, &k);
                if (r < 0)
                        return r;
                if (k == SIZE_MAX)
                        continue;
                from = &a->blocks[i];
                to = &a->blocks[k];
                if (to->seen == 0) {
                        to->address_start = from->address_start;
                        to->address_end = from->address_end;
                }
                to->seen += from->seen;
                to->no_cycles += from->no_cycles;
                r = grow((void **) &to->cycles, &to->n_cycles_allocated, to->n_cycles + from->n_cycles,
                         sizeof(uint16_t));
                if (r < 0)
                        return r;
                if (from->n_cycles > 0)
                        memcpy(to->cycles + to->n_cycles, from->cycles, from->n_cycles * sizeof(uint16_t));
                to->n_cycles += from->n_cycles;
                free(from->cycles);
                *from = (TimingBlock) { .module = TIMING_MODULE_NONE };
        }
        for (size_t i = 0; i < n_ips; i++) {
                const Mapping *m;

                if (a->ips[i].module != TIMING_MODULE_NONE || a->ips[i].samples == 0)
                        continue;
                m = mapping_find(a, a->ips[i].pid, a->ips[i].address);
                if (!m)
                        continue;
                r = ip_count(a, m->module, file_offset(m, a->ips[i].address), a->ips[i].address,
                             a->ips[i].pid, a->ips[i].samples);
                if (r < 0)
                        return r;
                a->ips[i].samples = 0;
        }
        /* what is left unmapped, now; the merged entries go */
        a->counters.unmapped = 0;
        k = 0;
        for (size_t i = 0; i < a->n_blocks; i++) {
                if (a->blocks[i].seen == 0)
                        continue;
                if (a->blocks[i].module == TIMING_MODULE_NONE)
                        a->counters.unmapped += a->blocks[i].seen;
                a->blocks[k++] = a->blocks[i];
        }
        a->n_blocks = k;
        k = 0;
        for (size_t i = 0; i < a->n_ips; i++) {
                if (a->ips[i].samples == 0)
                        continue;
                if (a->ips[i].module == TIMING_MODULE_NONE)
                        a->counters.unmapped += a->ips[i].samples;
                a->ips[k++] = a->ips[i];
        }
        a->n_ips = k;
        return 0;
}

int timing_analysis_add_sample(TimingAnalysis *a, const TimingSample *s) {
        size_t n = MIN(s->n_branches, (size_t) TIMING_BRANCHES_MAX);
        int r;

        if (a->finished)
                return -EBUSY;
        a->counters.samples++;
        r = add_ip(a, s->pid, s->ip);
        if (r < 0)
                return r;
        if (n == 0)
                a->counters.samples_without_branches++;
        a->counters.entries += n;
        for (size_t i = 0; i + 1 < n; i++) {
                r = add_block(a, s->pid, &s->branches[i], &s->branches[i + 1]);
                if (r < 0)
                        return r;
        }
        return 0;
}

int timing_analysis_add_record(TimingAnalysis *a, const TimingRecord *rec) {
        if (a->finished)
                return -EBUSY;
        switch (rec->kind) {
        case TIMING_RECORD_SAMPLE:
                return timing_analysis_add_sample(a, &rec->sample);
        case TIMING_RECORD_MAPPING:
                return timing_analysis_add_mapping(a, &rec->mapping);
        case TIMING_RECORD_FORK:
                return timing_analysis_add_fork(a, rec->task.ppid, rec->pid);
        case TIMING_RECORD_LOST:
                a->counters.lost += rec->lost;
                return 0;
        case TIMING_RECORD_THROTTLE:
                a->counters.throttled++;
                return 0;
        default:
                return 0;
        }
}

static int compare_u16(const void *x, const void *y) {
        uint16_t a = *(const uint16_t *) x, b = *(const uint16_t *) y;

        return (a > b) - (a < b);
}

void timing_stats_done(TimingStats *s) {
        free(s->bins);
        *s = (TimingStats) {};
}

int timing_stats_compute(uint16_t *cycles, size_t n, TimingStats *ret) {
        TimingStats s = { .n = n };
        uint32_t width, lo;
        size_t rank;
        double sum = 0;

        if (n == 0) {
                *ret = s;
                return 0;
        }
        qsort(cycles, n, sizeof(*cycles), compare_u16);
        for (size_t i = 0; i < n; i++)
                sum += cycles[i];
        s.min = cycles[0];
        s.max = cycles[n - 1];
        s.mean = sum / (double) n;
        s.median = n % 2 ? cycles[n / 2] : ((double) cycles[n / 2 - 1] + (double) cycles[n / 2]) / 2;
        rank = (size_t) ceil(0.9 * (double) n);
        s.p90 = cycles[MAX(rank, (size_t) 1) - 1];

        /* integer bins: one per cycle count, widened until the range fits the bound */
        width = (s.max - s.min) / TIMING_HISTOGRAM_BINS_MAX + 1;
        for (;; width++) {
                lo = s.min / width * width;
                if ((s.max - lo) / width + 1 <= TIMING_HISTOGRAM_BINS_MAX)
                        break;
        }
        s.hist_lo = lo;
        s.hist_width = width;
        s.n_bins = (s.max - lo) / width + 1;
        s.bins = calloc(s.n_bins, sizeof(*s.bins));
        if (!s.bins)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                s.bins[(cycles[i] - lo) / width]++;
        *ret = s;
        return 0;
}

static int compare_blocks(const void *x, const void *y) {
        const TimingBlock *a = x, *b = y;

        if (a->seen != b->seen)
                return a->seen < b->seen ? 1 : -1;
        if (a->module != b->module)
                return a->module < b->module ? -1 : 1;
        if (a->end != b->end)
                return a->end < b->end ? -1 : 1;
        return (a->start > b->start) - (a->start < b->start);
}

static int compare_ips(const void *x, const void *y) {
        const TimingIp *a = x, *b = y;

        if (a->samples != b->samples)
                return a->samples < b->samples ? 1 : -1;
        if (a->module != b->module)
                return a->module < b->module ? -1 : 1;
        return (a->offset > b->offset) - (a->offset < b->offset);
}

int timing_analysis_finish(TimingAnalysis *a) {
        int r;

        if (a->finished)
                return 0;
        r = place_late(a);
        if (r < 0)
                return r;
        for (size_t i = 0; i < a->n_blocks; i++) {
                TimingBlock *b = &a->blocks[i];

                r = timing_stats_compute(b->cycles, b->n_cycles, &b->stats);

                if (r < 0)
                        return r;
                free(b->cycles);
                b->cycles = NULL;
                b->n_cycles = b->n_cycles_allocated = 0;
        }
        /* the tables index the arrays' old order; nothing is looked up after this */
        free(a->block_table.slots);
        free(a->ip_table.slots);
        a->block_table.slots = a->ip_table.slots = NULL;
        a->block_table.n_slots = a->ip_table.n_slots = 0;
        if (a->n_blocks > 1)
                qsort(a->blocks, a->n_blocks, sizeof(*a->blocks), compare_blocks);
        if (a->n_ips > 1)
                qsort(a->ips, a->n_ips, sizeof(*a->ips), compare_ips);
        a->finished = true;
        return 0;
}

size_t timing_analysis_n_blocks(const TimingAnalysis *a) {
        return a->n_blocks;
}

const TimingBlock *timing_analysis_block(const TimingAnalysis *a, size_t i) {
        return i < a->n_blocks ? &a->blocks[i] : NULL;
}

size_t timing_analysis_n_ips(const TimingAnalysis *a) {
        return a->n_ips;
}

const TimingIp *timing_analysis_ip(const TimingAnalysis *a, size_t i) {
        return i < a->n_ips ? &a->ips[i] : NULL;
}

const TimingModule *timing_analysis_module(const TimingAnalysis *a, uint32_t i) {
        return i < a->n_modules ? &a->modules[i] : NULL;
}

const TimingCounters *timing_analysis_counters(const TimingAnalysis *a) {
        return &a->counters;
}
