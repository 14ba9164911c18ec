/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests: pmugate timing's symbols (libdwfl) and disassembly (capstone) on this test
 * program (a PIE) and a shared library the suite builds, placed where this process mapped them
 * (its /proc/self/maps, as the kernel's MMAP2 records give them); their stripped copies name
 * no function and say so; files that are gone, not regular or not ELF leave their addresses
 * unnamed with a reason
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "timing/known-lib.h"
#include "timing/timing-disasm.h"
#include "timing/timing-symbols.h"

int timing_known_alpha(int x);
int timing_known_asm(void);

/* the lines of its definition; the first instruction belongs to one of them (its first
 * statement, where the compiler leaves no prologue) */
static const int alpha_line = __LINE__ + 1;
__attribute__((noinline)) int timing_known_alpha(int x) {
        int product = 1;

        for (int i = 1; i <= x; i++)
                product = product * i + x;
        return product;
}

/* Four instructions of known size and mnemonic, as capstone's Intel syntax names them. */
#if defined(__x86_64__)
__asm__(".text\n"
        ".globl timing_known_asm\n"
        ".type timing_known_asm, @function\n"
        "timing_known_asm:\n"
        "        xor %eax, %eax\n"              /* 2 bytes */
        "        add $1, %eax\n"                /* 3 bytes */
        "        imul %eax, %eax\n"             /* 3 bytes */
        "        ret\n"                         /* 1 byte */
        ".size timing_known_asm, .-timing_known_asm\n");
static const char *const asm_mnemonics[] = { "xor", "add", "imul", "ret" };
static const uint8_t asm_sizes[] = { 2, 3, 3, 1 };
#elif defined(__aarch64__)
__asm__(".text\n"
        ".globl timing_known_asm\n"
        ".type timing_known_asm, %function\n"
        "timing_known_asm:\n"
        "        mov w0, #0\n"
        "        add w0, w0, #1\n"
        "        mul w0, w0, w0\n"
        "        ret\n"
        ".size timing_known_asm, .-timing_known_asm\n");
static const char *const asm_mnemonics[] = { "mov", "add", "mul", "ret" };
static const uint8_t asm_sizes[] = { 4, 4, 4, 4 };
#else
#error "the known instructions are written for x86-64 and AArch64"
#endif

/* Every executable mapping of this process, as the kernel's MMAP2 records would give them. */
static size_t read_mappings(TimingMapping *maps, size_t max) {
        _cleanup_fclose_ FILE *f = fopen("/proc/self/maps", "re");
        char line[4096 + 256];
        size_t n = 0;

        assert_non_null(f);
        while (n < max && fgets(line, sizeof(line), f)) {
                unsigned long long start, end, pgoff, ino;
                char perms[8];
                int path_at = 0;
                TimingMapping *m = &maps[n];

                if (sscanf(line, "%llx-%llx %7s %llx %*x:%*x %llu %n", &start, &end, perms, &pgoff, &ino,
                           &path_at) < 5 || perms[2] != 'x' || path_at == 0)
                        continue;
                line[strcspn(line, "\n")] = '\0';
                *m = (TimingMapping) { .start = start, .len = end - start, .pgoff = pgoff, .ino = ino };
                snprintf(m->path, sizeof(m->path), "%s", line + path_at);
                if (m->path[0] == '\0')
                        continue;
                n++;
        }
        return n;
}

static const TimingMapping *mapping_of(const TimingMapping *maps, size_t n, uint64_t address) {
        for (size_t i = 0; i < n; i++)
                if (address >= maps[i].start && address - maps[i].start < maps[i].len)
                        return &maps[i];
        fail_msg("no mapping holds 0x%" PRIx64, address);
        return NULL;
}

static bool ends_with(const char *s, const char *suffix) {
        size_t n = strlen(s), k = strlen(suffix);

        return n >= k && strcmp(s + n - k, suffix) == 0;
}

static TimingMapping maps[256];
static size_t n_maps;

static int setup(void **state) {
        (void) state;
        n_maps = read_mappings(maps, ELEMENTSOF(maps));
        return n_maps > 0 ? 0 : -1;
}

static void test_pie_and_library(void **state) {
        TimingSymbols *s = NULL;
        TimingSymbol sym;
        Dl_info dl;
        uint64_t alpha = (uint64_t) (uintptr_t) timing_known_alpha;
        uint64_t beta = (uint64_t) (uintptr_t) timing_known_lib_beta;

        (void) state;
        assert_int_equal(timing_symbols_new(&s), 0);
        for (size_t i = 0; i < n_maps; i++)
                assert_true(timing_symbols_add_mapping(s, &maps[i]) >= 0);
        /* the same mapping again reports nothing new */
        assert_int_equal(timing_symbols_add_mapping(s, mapping_of(maps, n_maps, alpha)), 0);

        assert_int_equal(timing_symbols_lookup(s, alpha, &sym), 0);
        assert_non_null(sym.module);
        assert_true(ends_with(sym.module, "/test_timing_symbols"));
        assert_non_null(sym.function);
        assert_string_equal(sym.function, "timing_known_alpha");
        assert_int_equal(sym.function_start, alpha);
        assert_true(sym.function_size > 0);
        assert_false(sym.stripped);
        assert_null(sym.reason);
        /* a PIE's file addresses are its run-time ones less where it was loaded */
        assert_true(dladdr(timing_known_alpha, &dl) != 0);
        assert_int_equal(sym.file_address, alpha - (uint64_t) (uintptr_t) dl.dli_fbase);
        assert_int_equal(sym.bias, (uint64_t) (uintptr_t) dl.dli_fbase);
        assert_non_null(sym.source_file);
        assert_true(ends_with(sym.source_file, "test_timing_symbols.c"));
        assert_in_range(sym.line, alpha_line, alpha_line + 6);

        /* an address inside the function: its name and start still */
        assert_int_equal(timing_symbols_lookup(s, alpha + sym.function_size - 1, &sym), 0);
        assert_string_equal(sym.function, "timing_known_alpha");
        assert_int_equal(sym.function_start, alpha);

        assert_int_equal(timing_symbols_lookup(s, beta, &sym), 0);
        assert_non_null(sym.module);
        assert_non_null(strstr(sym.module, "libtiming-known"));
        assert_string_equal(sym.function, "timing_known_lib_beta");
        assert_int_equal(sym.function_start, beta);
        assert_true(dladdr(timing_known_lib_beta, &dl) != 0);
        assert_int_equal(sym.file_address, beta - (uint64_t) (uintptr_t) dl.dli_fbase);
        assert_non_null(sym.source_file);
        assert_true(ends_with(sym.source_file, "known-lib.c"));
        assert_in_range(sym.line, TIMING_KNOWN_LIB_BETA_LINE, TIMING_KNOWN_LIB_BETA_LINE + 6);

        /* an address no mapping covers */
        assert_int_equal(timing_symbols_lookup(s, 0x10, &sym), 0);
        assert_null(sym.module);
        assert_null(sym.function);
        assert_string_equal(sym.reason, "no mapping covers the address");
        s = timing_symbols_free(s);
        assert_null(s);
}

/* The stripped copy of a file named in place of the file, at the same mapping: addresses
 * only, said so. */
static void check_stripped(const char *copy, uint64_t address, const char *function) {
        TimingSymbols *s = NULL, *full = NULL;
        TimingSymbol sym, named;
        TimingMapping m = *mapping_of(maps, n_maps, address);

        assert_int_equal(timing_symbols_new(&full), 0);
        assert_int_equal(timing_symbols_add_mapping(full, &m), 0);
        assert_int_equal(timing_symbols_lookup(full, address, &named), 0);
        assert_string_equal(named.function, function);

        snprintf(m.path, sizeof(m.path), "%s", copy);
        assert_int_equal(timing_symbols_new(&s), 0);
        assert_int_equal(timing_symbols_add_mapping(s, &m), 0);
        assert_int_equal(timing_symbols_lookup(s, address, &sym), 0);
        assert_string_equal(sym.module, copy);
        assert_true(sym.stripped);
        assert_null(sym.function);
        assert_null(sym.source_file);
        assert_string_equal(sym.reason, "stripped: no symbol table");
        assert_int_equal(sym.file_address, named.file_address);
        s = timing_symbols_free(s);
        full = timing_symbols_free(full);
}

static void test_stripped(void **state) {
        const char *exe = getenv("TIMING_STRIPPED_EXE"), *lib = getenv("TIMING_STRIPPED_LIB");

        (void) state;
        assert_non_null(exe);
        assert_non_null(lib);
        check_stripped(exe, (uint64_t) (uintptr_t) timing_known_alpha, "timing_known_alpha");
        check_stripped(lib, (uint64_t) (uintptr_t) timing_known_lib_beta, "timing_known_lib_beta");
}

/* A stripped copy whose .gnu_debuglink names a debug file beside it: named through that file,
 * as libdwfl's standard debuginfo path finds it. */
static void test_separate_debug_file(void **state) {
        const char *lib = getenv("TIMING_DEBUGLINK_LIB");
        uint64_t beta = (uint64_t) (uintptr_t) timing_known_lib_beta;
        TimingMapping m = *mapping_of(maps, n_maps, beta);
        TimingSymbols *s = NULL;
        TimingSymbol sym;

        (void) state;
        assert_non_null(lib);
        snprintf(m.path, sizeof(m.path), "%s", lib);
        assert_int_equal(timing_symbols_new(&s), 0);
        assert_int_equal(timing_symbols_add_mapping(s, &m), 0);
        assert_int_equal(timing_symbols_lookup(s, beta, &sym), 0);
        assert_string_equal(sym.module, lib);
        assert_false(sym.stripped);
        assert_non_null(sym.function);
        assert_string_equal(sym.function, "timing_known_lib_beta");
        assert_int_equal(sym.function_start, beta);
        assert_non_null(sym.source_file);
        assert_true(ends_with(sym.source_file, "known-lib.c"));
        s = timing_symbols_free(s);
}

static void expect_unnamed(const TimingMapping *m, const char *reason_part) {
        TimingSymbols *s = NULL;
        TimingSymbol sym;

        assert_int_equal(timing_symbols_new(&s), 0);
        assert_int_equal(timing_symbols_add_mapping(s, m), 1);
        assert_int_equal(timing_symbols_lookup(s, m->start + 16, &sym), 0);
        assert_null(sym.module);
        assert_null(sym.function);
        assert_non_null(sym.reason);
        if (!strstr(sym.reason, reason_part))
                fail_msg("reason \"%s\" does not say \"%s\"", sym.reason, reason_part);
        s = timing_symbols_free(s);
}

static void test_hostile_files(void **state) {
        TimingMapping m = { .start = 0x10000000, .len = 0x1000, .pgoff = 0 };
        char text[] = "/tmp/timing-not-elf-XXXXXX";
        int fd;

        (void) state;
        snprintf(m.path, sizeof(m.path), "/nonexistent/timing-gone");
        expect_unnamed(&m, "cannot open /nonexistent/timing-gone");
        snprintf(m.path, sizeof(m.path), "/dev/zero");
        expect_unnamed(&m, "not a regular file");
        snprintf(m.path, sizeof(m.path), "[vdso]");
        expect_unnamed(&m, "not a file");
        snprintf(m.path, sizeof(m.path), "//anon");
        expect_unnamed(&m, "anonymous");
        fd = mkstemp(text);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, "\177ELF but not really, just text\n", 32), 32);
        assert_int_equal(close(fd), 0);
        snprintf(m.path, sizeof(m.path), "%s", text);
        expect_unnamed(&m, "not an ELF");
        assert_int_equal(unlink(text), 0);

        /* the real file, but at an offset where it has no segment */
        m = *mapping_of(maps, n_maps, (uint64_t) (uintptr_t) timing_known_alpha);
        m.pgoff = UINT64_C(1) << 40;
        expect_unnamed(&m, "does not have the mapped bytes");
        assert_int_equal(timing_symbols_add_mapping(NULL, &m), -EINVAL);

        /* another file mapped where a named one was: the newer word wins, a file that cannot
         * be named hides the module below it, a second ELF file replaces it or is refused */
        {
                TimingSymbols *s = NULL;
                TimingSymbol sym;
                uint64_t alpha = (uint64_t) (uintptr_t) timing_known_alpha;
                TimingMapping over = *mapping_of(maps, n_maps, alpha);
                uint64_t beta = (uint64_t) (uintptr_t) timing_known_lib_beta;
                const char *lib = mapping_of(maps, n_maps, beta)->path;

                assert_int_equal(timing_symbols_new(&s), 0);
                assert_int_equal(timing_symbols_add_mapping(s, &over), 0);
                assert_int_equal(timing_symbols_lookup(s, alpha, &sym), 0);
                assert_string_equal(sym.function, "timing_known_alpha");
                snprintf(over.path, sizeof(over.path), "/nonexistent/timing-replaced");
                assert_int_equal(timing_symbols_add_mapping(s, &over), 1);
                assert_int_equal(timing_symbols_lookup(s, alpha, &sym), 0);
                assert_null(sym.function);
                assert_non_null(strstr(sym.reason, "timing-replaced"));
                /* a shared library at the executable's place: never the executable's names */
                assert_non_null(lib);
                snprintf(over.path, sizeof(over.path), "%s", lib);
                over.pgoff = 0;
                assert_true(timing_symbols_add_mapping(s, &over) >= 0);
                assert_int_equal(timing_symbols_lookup(s, alpha, &sym), 0);
                assert_true(!sym.function || strcmp(sym.function, "timing_known_alpha") != 0);
                assert_true(!sym.module || strcmp(sym.module, lib) == 0);
                s = timing_symbols_free(s);
        }

        /* a stream of mappings keeps at most TIMING_MAPPINGS_MAX of them, then says so */
        {
                TimingSymbols *s = NULL;
                TimingSymbol sym;
                TimingMapping pseudo = { .len = 0x1000 };

                snprintf(pseudo.path, sizeof(pseudo.path), "[anon:flood]");
                assert_int_equal(timing_symbols_new(&s), 0);
                for (unsigned i = 0; i < TIMING_MAPPINGS_MAX + 10; i++) {
                        pseudo.start = 0x100000000 + (uint64_t) i * 0x1000;
                        assert_int_equal(timing_symbols_add_mapping(s, &pseudo), 1);
                }
                assert_int_equal(timing_symbols_lookup(s, 0x100000000 + 16, &sym), 0);
                assert_non_null(strstr(sym.reason, "not a file"));
                assert_int_equal(timing_symbols_lookup(s, pseudo.start + 16, &sym), 0);
                assert_non_null(strstr(sym.reason, "had more than 4096"));
                s = timing_symbols_free(s);
        }
}

/* The number of instructions objdump shows for symbol in file. */
static size_t objdump_count(const char *file, const char *symbol) {
        char cmd[4096 + 128], line[512];
        FILE *p;
        size_t n = 0;

        snprintf(cmd, sizeof(cmd), "objdump -d --no-show-raw-insn --disassemble=%s '%s'", symbol, file);
        p = popen(cmd, "r");
        assert_non_null(p);
        while (fgets(line, sizeof(line), p)) {
                unsigned long long a;
                char c;

                /* "  1139:\tpush   %rbp": an instruction line */
                if (sscanf(line, " %llx%c", &a, &c) == 2 && c == ':' && line[0] == ' ')
                        n++;
        }
        assert_int_equal(pclose(p), 0);
        return n;
}

static void test_disasm(void **state) {
        TimingSymbols *s = NULL;
        TimingSymbol sym;
        TimingDisasm d;
        Elf *elf;
        uint64_t bias, asm_at = (uint64_t) (uintptr_t) timing_known_asm, start, last;
        size_t expected;

        (void) state;
        assert_int_equal(timing_symbols_new(&s), 0);
        assert_int_equal(timing_symbols_add_mapping(s, mapping_of(maps, n_maps, asm_at)), 0);

        /* the hand-written function: its four instructions, to its ret */
        assert_int_equal(timing_symbols_elf(s, asm_at, &elf, &bias), 0);
        start = asm_at - bias;
        last = start;
        for (size_t i = 0; i + 1 < ELEMENTSOF(asm_sizes); i++)
                last += asm_sizes[i];
        assert_int_equal(timing_disasm(elf, start, last, &d), 0);
        assert_string_equal(d.reason, "");
        assert_int_equal(d.n, ELEMENTSOF(asm_mnemonics));
        assert_true(d.ends_at_end);
        for (size_t i = 0; i < d.n; i++) {
                assert_string_equal(d.insns[i].mnemonic, asm_mnemonics[i]);
                assert_int_equal(d.insns[i].size, asm_sizes[i]);
        }
        assert_int_equal(d.insns[0].address, start);
        timing_disasm_done(&d);
        /* a range ending inside an instruction: decoded, and said not to be a block */
        assert_int_equal(timing_disasm(elf, start, start + 1, &d), 0);
        assert_int_equal(d.n, 1);
        assert_false(d.ends_at_end);
        timing_disasm_done(&d);

        /* a compiled function: as many instructions as objdump shows */
        assert_int_equal(timing_symbols_lookup(s, (uint64_t) (uintptr_t) timing_known_alpha, &sym), 0);
        assert_int_equal(timing_disasm(elf, sym.function_start - bias,
                                       sym.function_start - bias + sym.function_size - 1, &d), 0);
        expected = objdump_count(sym.module, "timing_known_alpha");
        assert_true(expected > 3);
        assert_int_equal(d.n, expected);
        assert_int_equal(d.insns[d.n - 1].address + d.insns[d.n - 1].size,
                         sym.function_start - bias + sym.function_size);
        timing_disasm_done(&d);

        /* refused: too long, reversed, outside the file's code */
        assert_int_equal(timing_disasm(elf, start, start + TIMING_DISASM_BYTES_MAX, &d), -ERANGE);
        assert_non_null(strstr(d.reason, "no block"));
        timing_disasm_done(&d);
        assert_int_equal(timing_disasm(elf, start, start - 1, &d), -ERANGE);
        timing_disasm_done(&d);
        assert_int_equal(timing_disasm(elf, UINT64_C(0x7fff00000000), UINT64_C(0x7fff00000010), &d),
                         -ENOENT);
        assert_non_null(strstr(d.reason, "no code"));
        timing_disasm_done(&d);
        assert_int_equal(timing_symbols_elf(s, 0x10, &elf, &bias), -ENOENT);
        s = timing_symbols_free(s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pie_and_library),
                cmocka_unit_test(test_stripped),
                cmocka_unit_test(test_separate_debug_file),
                cmocka_unit_test(test_hostile_files),
                cmocka_unit_test(test_disasm),
        };
        /* the library's function is called, so that it is linked and mapped */
        if (timing_known_lib_beta(3) != 9 || timing_known_alpha(2) < 0 || timing_known_asm() != 1)
                return EXIT_FAILURE;
        return cmocka_run_group_tests(tests, setup, NULL);
}
