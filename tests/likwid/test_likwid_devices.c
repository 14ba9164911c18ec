/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The forwarder's LIKWID device numbers per release, against the device lists extracted from
 * LIKWID's own source (tests/likwid/devices/likwid-*.txt, made by contrib/likwid/extract-devices.py
 * from src/includes/pci_types.h of tags v5.2.2, v5.3.0 and v5.4.1): every entry of every list
 * translates to 5.2's number of the same name when the forwarder serves it, and to "unserved"
 * otherwise; the index past each list is refused.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "likwid/likwid-map.h"
#include "macro.h"

#define NAME_MAX_LEN 64
#define DEVICES_MAX 1024

/* The devices the forwarder serves (or refuses with a reason) on some model: the rest of every
 * list must be "unserved". */
static const char *const served[] = {
        "MSR_DEV",
        "PCI_IMC_DEVICE_0_CH_0", "PCI_IMC_DEVICE_0_CH_1", "PCI_IMC_DEVICE_0_CH_2", "PCI_IMC_DEVICE_0_CH_3",
        "PCI_IMC_DEVICE_1_CH_0", "PCI_IMC_DEVICE_1_CH_1", "PCI_IMC_DEVICE_1_CH_2", "PCI_IMC_DEVICE_1_CH_3",
        "MMIO_IMC_DEVICE_0_CH_0", "MMIO_IMC_DEVICE_0_CH_1", "MMIO_IMC_DEVICE_1_CH_0", "MMIO_IMC_DEVICE_1_CH_1",
        "MMIO_IMC_DEVICE_2_CH_0", "MMIO_IMC_DEVICE_2_CH_1", "MMIO_IMC_DEVICE_3_CH_0", "MMIO_IMC_DEVICE_3_CH_1",
        "MMIO_IMC_DEVICE_0_FREERUN", "MMIO_IMC_DEVICE_1_FREERUN", "MMIO_IMC_DEVICE_2_FREERUN",
        "MMIO_IMC_DEVICE_3_FREERUN",
};

typedef struct DeviceList {
        char names[DEVICES_MAX][NAME_MAX_LEN];
        size_t n;               /* MAX_NUM_PCI_DEVICES */
} DeviceList;

static DeviceList lists[_LIKWID_VERSION_MAX];

static void load(LikwidVersion v, const char *file) {
        const char *dir = getenv("PMUGATE_LIKWID_DEVICE_LISTS");
        char path[4096], name[NAME_MAX_LEN];
        unsigned index;
        FILE *f;

        assert_non_null(dir);
        (void) snprintf(path, sizeof(path), "%s/%s", dir, file);
        f = fopen(path, "re");
        assert_non_null(f);
        while (fscanf(f, "%u %63s", &index, name) == 2) {
                /* extract-devices.py writes the enum in order, without gaps */
                assert_int_equal(index, lists[v].n);
                if (strcmp(name, "MAX_NUM_PCI_DEVICES") == 0)
                        break;
                assert_true(index < DEVICES_MAX);
                strcpy(lists[v].names[lists[v].n++], name);
        }
        assert_int_equal(fclose(f), 0);
        assert_true(lists[v].n > 0);
}

static int setup(void **state) {
        load(LIKWID_VERSION_5_2, "likwid-5.2.2.txt");
        load(LIKWID_VERSION_5_3, "likwid-5.3.0.txt");
        load(LIKWID_VERSION_5_4, "likwid-5.4.1.txt");
        return 0;
}

static bool is_served(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(served); i++)
                if (strcmp(served[i], name) == 0)
                        return true;
        return false;
}

static uint32_t index_52(const char *name) {
        for (size_t i = 0; i < lists[LIKWID_VERSION_5_2].n; i++)
                if (strcmp(lists[LIKWID_VERSION_5_2].names[i], name) == 0)
                        return (uint32_t) i;
        fail_msg("%s is not in LIKWID 5.2's list", name);
        return UINT32_MAX;
}

static void test_every_entry(void **state) {
        for (LikwidVersion v = LIKWID_VERSION_5_2; v < _LIKWID_VERSION_MAX; v++) {
                size_t n_served = 0;

                for (uint32_t i = 0; i < lists[v].n; i++) {
                        const char *name = lists[v].names[i];
                        uint32_t got = 0;

                        assert_int_equal(likwid_device_from_version(v, i, &got), 0);
                        if (is_served(name)) {
                                n_served++;
                                if (got != index_52(name))
                                        fail_msg("LIKWID %s device %u %s: got %u, 5.2's number is %u",
                                                 likwid_version_name(v), i, name, got, index_52(name));
                        } else if (got != LIKWID_DEV_UNSERVED)
                                fail_msg("LIKWID %s device %u %s is served as %u", likwid_version_name(v), i, name,
                                         got);
                }
                /* every served device is in every release's list */
                assert_int_equal(n_served, ELEMENTSOF(served));
                assert_int_equal(likwid_device_from_version(v, (uint32_t) lists[v].n, &(uint32_t) { 0 }), -ERANGE);
        }
}

static void test_issue_numbers(void **state) {
        uint32_t got = 0;

        /* the numbers LIKWID's users meet: memory channel 0 is 5, 21 and 49 */
        assert_int_equal(likwid_device_from_version(LIKWID_VERSION_5_3, 21, &got), 0);
        assert_int_equal(got, LIKWID_DEV_IMC_0_CH_0);
        assert_int_equal(likwid_device_from_version(LIKWID_VERSION_5_4, 49, &got), 0);
        assert_int_equal(got, LIKWID_DEV_IMC_0_CH_0);
        assert_int_equal(likwid_device_from_version(LIKWID_VERSION_5_4, 169, &got), 0);
        assert_int_equal(got, LIKWID_DEV_MMIO_FREERUN_FIRST);
        /* 5.4's device 5 is a link of the UPI, not a memory channel */
        assert_int_equal(likwid_device_from_version(LIKWID_VERSION_5_4, 5, &got), 0);
        assert_int_equal(got, LIKWID_DEV_UNSERVED);
        assert_int_equal(likwid_device_from_version(LIKWID_VERSION_UNKNOWN, 0, &got), -EINVAL);
}

static void test_version_names(void **state) {
        char found[16];

        assert_int_equal(likwid_version_parse("5.2"), LIKWID_VERSION_5_2);
        assert_int_equal(likwid_version_parse("5.2.2"), LIKWID_VERSION_5_2);
        assert_int_equal(likwid_version_parse("5.3.0"), LIKWID_VERSION_5_3);
        assert_int_equal(likwid_version_parse("5.4.1"), LIKWID_VERSION_5_4);
        assert_int_equal(likwid_version_parse("5.20"), LIKWID_VERSION_UNKNOWN);
        assert_int_equal(likwid_version_parse("5.5"), LIKWID_VERSION_UNKNOWN);
        assert_int_equal(likwid_version_parse("4.3"), LIKWID_VERSION_UNKNOWN);
        assert_int_equal(likwid_version_parse(""), LIKWID_VERSION_UNKNOWN);

        assert_int_equal(likwid_version_from_maps(
                "7f00-7f10 r-xp 00000000 08:01 1234 /usr/lib/x86_64-linux-gnu/liblikwid.so.5.2\n"
                "7f20-7f30 r-xp 00000000 08:01 1235 /usr/lib/x86_64-linux-gnu/libc.so.6\n", found, sizeof(found)),
                LIKWID_VERSION_5_2);
        assert_string_equal(found, "5.2");
        assert_int_equal(likwid_version_from_maps(
                "7f00-7f10 r-xp 00000000 08:01 1234 /opt/likwid/lib/liblikwid.so.5.4\n", found, sizeof(found)),
                LIKWID_VERSION_5_4);
        /* a debugger script beside the library is not the library */
        assert_int_equal(likwid_version_from_maps(
                "7f00-7f10 r--p 00000000 08:01 1 /x/liblikwid.so.5.3-gdb.py\n"
                "7f00-7f10 r-xp 00000000 08:01 1 /x/liblikwid.so.5.3\n", found, sizeof(found)), LIKWID_VERSION_5_3);
        assert_int_equal(likwid_version_from_maps(
                "7f00-7f10 r-xp 00000000 08:01 1234 /home/u/likwid/liblikwid.so\n", found, sizeof(found)),
                LIKWID_VERSION_UNKNOWN);
        assert_string_equal(found, "");
        assert_int_equal(likwid_version_from_maps(
                "7f00-7f10 r-xp 00000000 08:01 1234 /opt/liblikwid.so.6.0\n", found, sizeof(found)),
                LIKWID_VERSION_UNKNOWN);
        assert_string_equal(found, "6.0");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_every_entry),
                cmocka_unit_test(test_issue_numbers),
                cmocka_unit_test(test_version_names),
        };

        return cmocka_run_group_tests(tests, setup, NULL);
}
