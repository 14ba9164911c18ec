/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: register allowlist files, which decide every register a client may touch
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_util.h"
#include "macro.h"
#include "pmu/allowlist.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MODEL_CHARS "abcdefghijklmnopqrstuvwxyz0123456789_-"
#define CLASS_CHARS "abcdefghijklmnopqrstuvwxyz0123456789-"
#define NAME_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_."
/* Ranges up to this many registers are checked address by address against the never-list. */
#define NEVER_SCAN_MAX 0x10000U

DEFINE_TRIVIAL_CLEANUP_FUNC(Allowlist *, allowlist_free);

static void assert_token(const char *s, size_t size, const char *chars) {
        size_t len = strnlen(s, size);

        fuzz_assert(len > 0 && len < size);
        fuzz_assert(strspn(s, chars) == len);
}

static void assert_entry_common(const AllowEntry *e) {
        char name[ALLOW_NAME_MAX + 16], tiny[4];

        fuzz_assert(e->first <= e->last);
        fuzz_assert(e->scope < _REG_SCOPE_MAX && reg_scope_to_string(e->scope));
        fuzz_assert(!((e->flags & ALLOW_FLAG_COUNTER) && (e->flags & ALLOW_FLAG_ACTION)));
        assert_token(e->cls, sizeof(e->cls), CLASS_CHARS);
        assert_token(e->name, sizeof(e->name), NAME_CHARS);

        /* Display names of both ends, also into a buffer too small for them. */
        allow_entry_register_name(e, e->first, name, sizeof(name));
        fuzz_assert(strncmp(name, e->name, strlen(e->name)) == 0);
        allow_entry_register_name(e, e->last, name, sizeof(name));
        fuzz_assert(strncmp(name, e->name, strlen(e->name)) == 0);
        allow_entry_register_name(e, e->last, tiny, sizeof(tiny));
        fuzz_assert(strlen(tiny) < sizeof(tiny));
}

static void assert_msr_entry(const Allowlist *a, const AllowEntry *e) {
        /* A read-only entry is flagged only where a register may not even be read. */
        bool never = false, writable = e->write_mask != 0;

        assert_entry_common(e);
        fuzz_assert(!e->pci && e->width == 8);
        fuzz_assert(allowlist_find_msr(a, e->first) == e);
        fuzz_assert(allowlist_find_msr(a, e->last) == e);

        /* The parser's flag is what makes requests consult the never-list; a range that
         * overlaps it without the flag would open a register the daemon must never touch. */
        if (e->last - e->first < NEVER_SCAN_MAX) {
                for (uint64_t reg = e->first; reg <= e->last && !never; reg++)
                        never = never_list_lookup((uint32_t) reg, writable) != NULL;
                fuzz_assert(never == !!(e->flags & ALLOW_FLAG_NEVER));
        } else if (never_list_lookup(e->first, writable) || never_list_lookup(e->last, writable))
                fuzz_assert(e->flags & ALLOW_FLAG_NEVER);
}

static void assert_pci_entry(const Allowlist *a, const AllowEntry *e) {
        assert_entry_common(e);
        fuzz_assert(e->pci);
        fuzz_assert(e->width == 4 || e->width == 8);
        fuzz_assert(e->first % e->width == 0 && (e->last - e->first) % e->width == 0);
        fuzz_assert(e->last + e->width <= 4096);
        fuzz_assert(e->width == 8 || e->write_mask <= UINT32_MAX);
        /* A writable entry reaching into the configuration header is flagged: check_pci then
         * refuses writes there. */
        fuzz_assert(!!(e->flags & ALLOW_FLAG_NEVER) ==
                    (e->write_mask != 0 && e->first < PCI_CONFIG_HEADER_END));
        fuzz_assert(allowlist_find_pci(a, e->pci_vendor, e->pci_device, e->first) == e);
        fuzz_assert(allowlist_find_pci(a, e->pci_vendor, e->pci_device, e->last) == e);
        /* Half a register is no register. */
        fuzz_assert(!allowlist_find_pci(a, e->pci_vendor, e->pci_device, e->first + 1));
}

static void assert_allowlist_valid(const Allowlist *a) {
        fuzz_assert(strcmp(a->path, "fuzz.conf") == 0);
        fuzz_assert(a->n_models >= 1 && a->n_models <= ELEMENTSOF(a->models));
        for (unsigned i = 0; i < a->n_models; i++) {
                assert_token(a->models[i], sizeof(a->models[i]), MODEL_CHARS);
                for (unsigned j = 0; j < i; j++)
                        fuzz_assert(strcmp(a->models[i], a->models[j]) != 0);
        }

        /* Sorted and disjoint: lookups binary-search, and one register has one entry. */
        for (size_t i = 0; i < a->n_msr; i++) {
                assert_msr_entry(a, &a->msr[i]);
                if (i > 0)
                        fuzz_assert(a->msr[i - 1].last < a->msr[i].first);
        }
        for (size_t i = 0; i < a->n_pci; i++) {
                assert_pci_entry(a, &a->pci[i]);
                if (i > 0) {
                        const AllowEntry *p = &a->pci[i - 1], *e = &a->pci[i];
                        uint32_t pkey = (uint32_t) p->pci_vendor << 16 | p->pci_device;
                        uint32_t ekey = (uint32_t) e->pci_vendor << 16 | e->pci_device;

                        fuzz_assert(pkey < ekey || (pkey == ekey && p->last + p->width <= e->first));
                }
        }
        fuzz_assert(a->n_msr + a->n_pci <= 4096);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *copy = fuzz_copy(data, size);
        _cleanup_fclose_ FILE *f = fuzz_open_stream(copy, size);
        _cleanup_(allowlist_freep) Allowlist *a = NULL;
        unsigned line = 0;
        char reason[512];
        int r;

        memset(reason, 'x', sizeof(reason));
        r = allowlist_parse_stream(f, "fuzz.conf", &a, &line, reason, sizeof(reason));
        fuzz_assert(r == 0 || r == -EINVAL || r == -ENOMEM);
        if (r < 0) {
                fuzz_assert(!a);
                if (r == -EINVAL) {
                        fuzz_assert(line >= 1);
                        fuzz_assert(FUZZ_TERMINATED(reason));
                        fuzz_assert(strncmp(reason, "line ", strlen("line ")) == 0);
                }
                return 0;
        }
        fuzz_assert(a);
        assert_allowlist_valid(a);
        return 0;
}
