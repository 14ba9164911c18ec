/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: lease journals as the daemon reads them back at start-up, parsed from memory,
 * checked and restored on an in-memory machine whose backend asserts that nothing is written
 * that an allowed client could not write
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_seal.h"
#include "log.h"
#include "macro.h"
#include "pmu/journal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define N_CPUS 4U
#define OFFLINE_CPU 3U
#define FAILING_MSR 0x189U      /* the device refuses it, as firmware holding it would */
#define VENDOR 0x8086U
#define DEVICE 0x2042U

static AllowEntry msr_entries[] = {
        { .first = 0xC1, .last = 0xC4, .write_mask = 0xFFFFFFFFFFFF, .width = 8,
          .flags = ALLOW_FLAG_COUNTER },
        { .first = 0x186, .last = 0x189, .write_mask = 0xFFC7FFFF, .width = 8 },
        { .first = 0x38E, .last = 0x38E, .write_mask = 0, .width = 8 },
        { .first = 0x38F, .last = 0x38F, .write_mask = 0x70000000F, .width = 8 },
        { .first = 0x390, .last = 0x390, .write_mask = 0x70000000F, .width = 8, .flags = ALLOW_FLAG_ACTION },
        /* A data file that lists a never-list register: the journal must still refuse it. */
        { .first = 0x600, .last = 0x600, .write_mask = UINT64_MAX, .width = 8, .flags = ALLOW_FLAG_NEVER },
};

static AllowEntry pci_entries[] = {
        { .first = 0xA0, .last = 0xB8, .write_mask = 0, .pci_vendor = VENDOR, .pci_device = DEVICE,
          .width = 8, .pci = true, .flags = ALLOW_FLAG_COUNTER },
        { .first = 0xD8, .last = 0xE4, .write_mask = 0xFFC6FFFF, .pci_vendor = VENDOR, .pci_device = DEVICE,
          .width = 4, .pci = true },
        { .first = 0xF8, .last = 0xF8, .write_mask = 0, .pci_vendor = VENDOR, .pci_device = DEVICE,
          .width = 4, .pci = true },
};

static Allowlist allowlist = {
        .msr = msr_entries,
        .n_msr = ELEMENTSOF(msr_entries),
        .pci = pci_entries,
        .n_pci = ELEMENTSOF(pci_entries),
};

static MachineCpu cpus[N_CPUS];
static MachineUnit units[2];
static Machine machine = { .cpus = cpus, .n_cpus = N_CPUS, .units = units, .n_units = ELEMENTSOF(units) };

/* Every register reads as a pattern of its address, so a write is checked against it. */
static uint64_t current_of(uint32_t target, uint32_t reg, unsigned width) {
        uint64_t v = UINT64_C(0xA5A55A5AC3C33C3C) ^ ((uint64_t) reg << 17) ^ target;

        return width >= 8 ? v : v & ((UINT64_C(1) << (8 * width)) - 1);
}

static int msr_read(Backend *b, uint32_t cpu, uint32_t reg, uint64_t *ret) {
        assert(cpu < N_CPUS && cpus[cpu].online);
        if (reg == FAILING_MSR)
                return -EIO;
        *ret = current_of(cpu, reg, 8);
        return 0;
}

static void check_write(const AllowEntry *e, uint64_t current, uint64_t value) {
        uint64_t mask = e->write_mask & (e->width >= 8 ? UINT64_MAX : (UINT64_C(1) << (8 * e->width)) - 1);

        assert(!(e->flags & ALLOW_FLAG_ACTION));
        if (e->flags & ALLOW_FLAG_COUNTER)
                assert(value == 0);
        else {
                assert(e->write_mask != 0);
                assert((value & ~mask) == (current & ~mask));
        }
}

static int msr_write(Backend *b, uint32_t cpu, uint32_t reg, uint64_t value) {
        const AllowEntry *e = allowlist_find_msr(&allowlist, reg);

        assert(cpu < N_CPUS && cpus[cpu].present && cpus[cpu].online);
        assert(!never_list_lookup(reg, /* write= */ true));
        assert(e);
        check_write(e, current_of(cpu, reg, 8), value);
        return 0;
}

static int pci_read(Backend *b, uint32_t unit, uint32_t offset, unsigned width, uint64_t *ret) {
        assert(unit < machine.n_units);
        *ret = current_of(unit, offset, width);
        return 0;
}

static int pci_write(Backend *b, uint32_t unit, uint32_t offset, unsigned width, uint64_t value) {
        const AllowEntry *e;

        assert(unit < machine.n_units);
        assert(offset >= PCI_CONFIG_HEADER_END);
        e = allowlist_find_pci(&allowlist, units[unit].vendor, units[unit].device, offset);
        assert(e && e->width == width);
        check_write(e, current_of(unit, offset, width), value);
        return 0;
}

static const BackendVTable vtable = {
        .name = "fuzz",
        .msr_read = msr_read,
        .msr_write = msr_write,
        .pci_read = pci_read,
        .pci_write = pci_write,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        Backend backend = { .vtable = &vtable, .machine = &machine };
        JournalContext ctx = { .machine = &machine, .allowlist = &allowlist, .backend = &backend };
        _cleanup_(journal_done) Journal j = {};
        _cleanup_(state_buffer_done) StateBuffer sealed = { .max = PMUGATE_JOURNAL_FILE_SIZE_MAX };
        JournalOutcome o;
        char reason[256];
        unsigned last = 1;
        int r;

        /* Every refused line is logged; at fuzzing speed that is noise. */
        log_set_max_level(LOG_CRIT);
        for (uint32_t c = 0; c < N_CPUS; c++)
                cpus[c] = (MachineCpu) { .present = true, .online = c != OFFLINE_CPU };
        for (size_t u = 0; u < ELEMENTSOF(units); u++)
                units[u] = (MachineUnit) { .vendor = VENDOR, .device = DEVICE };

        if (fuzz_seal_lines(&data, &size, &sealed) < 0)
                return 0;
        r = journal_parse((const char *) data, size, &j, reason, sizeof(reason));
        assert(r == 0 || r == -EBADMSG || r == -ENOMEM);
        if (r < 0) {
                assert(memchr(reason, '\0', sizeof(reason)));
                return 0;
        }
        assert(state_boot_id_valid(j.header.boot_id, strlen(j.header.boot_id)));
        assert(j.header.cpu < PMUGATE_CPUS_MAX);
        assert(state_name_valid(j.header.role, strlen(j.header.role), JOURNAL_ROLE_MAX));
        assert(!j.header.job[0] || state_name_valid(j.header.job, strlen(j.header.job), PMUGATE_STRING_MAX));
        assert(j.n_lines <= PMUGATE_LEASE_JOURNAL_MAX);
        assert(j.n_dropped == 0 || j.n_lines == PMUGATE_LEASE_JOURNAL_MAX);
        for (size_t i = 0; i < j.n_lines; i++) {
                const JournalLine *l = &j.lines[i];

                assert(l->lineno > last);
                last = l->lineno;
                assert(l->verdict == JOURNAL_RESTORE || l->verdict == JOURNAL_TORN ||
                       l->verdict == JOURNAL_BAD_CHECKSUM || l->verdict == JOURNAL_BAD_SYNTAX);
                assert(l->verdict != JOURNAL_TORN || i == j.n_lines - 1);
                if (l->verdict == JOURNAL_RESTORE)
                        assert(l->entry.width == 4 || l->entry.width == 8);
        }
        journal_restore(&ctx, "lease-cpu0", &j, &o);
        assert(o.restored + o.refused + o.failed == j.n_lines + j.n_dropped);
        return 0;
}
