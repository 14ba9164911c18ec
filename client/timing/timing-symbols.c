/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate timing: symbols and source lines through libdwfl, offline, from mapping records
 */
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "timing/timing-symbols.h"

/* What the module knows beyond libdwfl, hung on the module's user data slot. */
typedef struct ModuleInfo {
        char *path;
        uint64_t bias;
        Dwfl_Module *module;
        int stripped;                   /* -1: not looked at yet */
        uint64_t seq;                   /* when it was reported, in mappings added */
} ModuleInfo;

/* A mapping whose addresses stay unnamed, and why. */
typedef struct Unnamed {
        uint64_t start, end;
        char *reason;
        uint64_t seq;
} Unnamed;

struct TimingSymbols {
        Dwfl *dwfl;
        /* libdwfl keeps a pointer to its callbacks: they live as long as it */
        Dwfl_Callbacks callbacks;
        char *debuginfo_path;
        ModuleInfo **modules;
        size_t n_modules;
        Unnamed *unnamed;
        size_t n_unnamed;
        size_t n_mappings;
        bool overflowed;
        char overflow_reason[96];
};

int timing_symbols_new(TimingSymbols **ret) {
        _cleanup_free_ TimingSymbols *s = NULL;

        if (!ret)
                return -EINVAL;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->callbacks = (Dwfl_Callbacks) {
                .find_elf = dwfl_build_id_find_elf,
                /* the file's .gnu_debuglink and build id, under the standard path: a
                 * distribution's -dbgsym packages, or a .debug file beside the binary */
                .find_debuginfo = dwfl_standard_find_debuginfo,
                .section_address = dwfl_offline_section_address,
                .debuginfo_path = &s->debuginfo_path,
        };
        s->dwfl = dwfl_begin(&s->callbacks);
        if (!s->dwfl)
                return -ENOMEM;
        *ret = TAKE_PTR(s);
        return 0;
}

TimingSymbols *timing_symbols_free(TimingSymbols *s) {
        if (!s)
                return NULL;
        dwfl_end(s->dwfl);
        for (size_t i = 0; i < s->n_modules; i++) {
                free(s->modules[i]->path);
                free(s->modules[i]);
        }
        free(s->modules);
        for (size_t i = 0; i < s->n_unnamed; i++)
                free(s->unnamed[i].reason);
        free(s->unnamed);
        free(s);
        return NULL;
}

static int add_unnamed(TimingSymbols *s, const TimingMapping *m, const char *fmt, ...) _printf_(3, 4);
static int add_unnamed(TimingSymbols *s, const TimingMapping *m, const char *fmt, ...) {
        Unnamed *u;
        va_list ap;
        char *reason;
        int n;

        va_start(ap, fmt);
        n = vasprintf(&reason, fmt, ap);
        va_end(ap);
        if (n < 0)
                return -ENOMEM;
        u = realloc(s->unnamed, (s->n_unnamed + 1) * sizeof(*u));
        if (!u) {
                free(reason);
                return -ENOMEM;
        }
        s->unnamed = u;
        s->unnamed[s->n_unnamed++] = (Unnamed) {
                .start = m->start,
                .end = m->start + m->len,
                .reason = reason,
                .seq = s->n_mappings,
        };
        return 1;
}

/* The load bias of the file elf when its bytes from file offset pgoff are mapped at start,
 * as perf places a mapping: through the PT_LOAD segment the mapping covers (an executable
 * one first), whose p_vaddr and p_offset differ by what the file's addresses and offsets
 * differ by there. -ENOENT: no segment of the file is in the mapping. */
static int mapping_bias(Elf *elf, const TimingMapping *m, uint64_t *ret_bias) {
        size_t n_phdrs;
        bool found = false;
        GElf_Phdr best = {};

        if (elf_getphdrnum(elf, &n_phdrs) < 0)
                return -ENOENT;
        for (size_t i = 0; i < n_phdrs; i++) {
                GElf_Phdr ph;

                if (!gelf_getphdr(elf, (int) i, &ph) || ph.p_type != PT_LOAD || ph.p_filesz == 0)
                        continue;
                /* the segment's file bytes overlap the mapping's */
                if (ph.p_offset + ph.p_filesz <= m->pgoff || ph.p_offset >= m->pgoff + m->len)
                        continue;
                if (!found || (!(best.p_flags & PF_X) && (ph.p_flags & PF_X))) {
                        best = ph;
                        found = true;
                }
        }
        if (!found)
                return -ENOENT;
        *ret_bias = m->start - m->pgoff - (best.p_vaddr - best.p_offset);
        return 0;
}

int timing_symbols_add_mapping(TimingSymbols *s, const TimingMapping *m) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ ModuleInfo *info = NULL;
        ModuleInfo **modules;
        Dwfl_Module *mod;
        Elf *elf;
        GElf_Ehdr ehdr;
        struct stat st;
        uint64_t bias = 0;
        int r;

        if (!s || !m || strnlen(m->path, sizeof(m->path)) >= sizeof(m->path))
                return -EINVAL;
        if (m->len == 0 || m->start + m->len < m->start)
                return -EINVAL;
        /* past the limit nothing more is kept, not even the reason, so that a stream of
         * mappings cannot grow the list: a lookup outside every kept one says so */
        if (s->n_mappings >= TIMING_MAPPINGS_MAX) {
                if (!s->overflowed)
                        (void) snprintf(s->overflow_reason, sizeof(s->overflow_reason),
                                        "no mapping kept covers the address (the process had more than %u)",
                                        TIMING_MAPPINGS_MAX);
                s->overflowed = true;
                return 1;
        }
        s->n_mappings++;
        if (m->path[0] != '/')
                return add_unnamed(s, m, "%s is not a file", m->path[0] ? m->path : "(no path)");
        if (strcmp(m->path, "//anon") == 0)
                return add_unnamed(s, m, "anonymous memory (generated code) has no file");

        /* non-blocking: a FIFO or device named by the record must not hang the reader */
        fd = open(m->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return add_unnamed(s, m, "cannot open %s: %s", m->path, strerror(errno));
        if (fstat(fd, &st) < 0)
                return add_unnamed(s, m, "cannot stat %s: %s", m->path, strerror(errno));
        if (!S_ISREG(st.st_mode))
                return add_unnamed(s, m, "%s is not a regular file", m->path);

        elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
        if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &ehdr) ||
            (ehdr.e_type != ET_EXEC && ehdr.e_type != ET_DYN)) {
                elf_end(elf);
                return add_unnamed(s, m, "%s is not an ELF executable or shared library", m->path);
        }
        r = mapping_bias(elf, m, &bias);
        elf_end(elf);
        if (r < 0 || (ehdr.e_type == ET_EXEC && bias != 0))
                /* a file rebuilt since it was mapped, or a record that lies */
                return add_unnamed(s, m, "%s does not have the mapped bytes at offset 0x%llx", m->path,
                                   (unsigned long long) m->pgoff);

        for (size_t i = 0; i < s->n_modules; i++)
                if (s->modules[i]->bias == bias && strcmp(s->modules[i]->path, m->path) == 0)
                        return 0;

        info = calloc(1, sizeof(*info));
        if (!info)
                return -ENOMEM;
        info->path = strdup(m->path);
        if (!info->path)
                return -ENOMEM;
        info->bias = bias;
        info->stripped = -1;
        info->seq = s->n_mappings;
        modules = realloc(s->modules, (s->n_modules + 1) * sizeof(*modules));
        if (!modules) {
                free(info->path);
                return -ENOMEM;
        }
        s->modules = modules;

        dwfl_report_begin_add(s->dwfl);
        /* ET_DYN (PIE, shared libraries): placed at bias plus its p_vaddr; ET_EXEC where it is */
        mod = dwfl_report_elf(s->dwfl, m->path, m->path, fd, bias, /* add_p_vaddr= */ true);
        if (mod)
                fd = -EBADF;    /* libdwfl's now */
        (void) dwfl_report_end(s->dwfl, NULL, NULL);
        if (!mod) {
                free(info->path);
                return add_unnamed(s, m, "%s: %s", m->path, dwfl_errmsg(-1));
        }
        info->module = mod;
        {
                void **userdata;

                (void) dwfl_module_info(mod, &userdata, NULL, NULL, NULL, NULL, NULL, NULL);
                *userdata = info;
        }
        s->modules[s->n_modules++] = TAKE_PTR(info);
        return 0;
}

static bool has_symtab(Elf *elf) {
        Elf_Scn *scn = NULL;

        while ((scn = elf_nextscn(elf, scn))) {
                GElf_Shdr sh;

                if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB && sh.sh_size > 0)
                        return true;
        }
        return false;
}

/* Whether neither the file nor a separate debug file found for it has a symbol table (its
 * .dynsym names only what it exports, and says nothing of the rest). */
static bool module_stripped(ModuleInfo *info) {
        Dwarf_Addr bias;
        Elf *elf;
        Dwarf *dw;

        if (info->stripped >= 0)
                return info->stripped;
        elf = dwfl_module_getelf(info->module, &bias);
        info->stripped = 1;
        if (elf && has_symtab(elf))
                info->stripped = 0;
        else {
                dw = dwfl_module_getdwarf(info->module, &bias);
                if (dw && dwarf_getelf(dw) && has_symtab(dwarf_getelf(dw)))
                        info->stripped = 0;
        }
        return info->stripped;
}

static ModuleInfo *module_info(Dwfl_Module *mod) {
        void **userdata;

        if (!dwfl_module_info(mod, &userdata, NULL, NULL, NULL, NULL, NULL, NULL))
                return NULL;
        return *userdata;
}

/* The line table entry of address, through the compile unit whose ranges hold it. libdw finds
 * the unit through .debug_aranges, which clang does not emit (and elfutils before 0.191 does
 * not build from the units): then each unit's own ranges are asked. */
static const char *source_line(Dwfl_Module *mod, uint64_t address, int *ret_line) {
        Dwfl_Line *line = dwfl_module_getsrc(mod, address);
        Dwarf_Die *cu = NULL;
        Dwarf_Addr bias;
        int lineno = 0;

        if (line) {
                const char *file = dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL);

                if (file && lineno > 0) {
                        *ret_line = lineno;
                        return file;
                }
                return NULL;
        }
        while ((cu = dwfl_module_nextcu(mod, cu, &bias))) {
                Dwarf_Line *l;
                const char *file;

                if (dwarf_haspc(cu, address - bias) <= 0)
                        continue;
                l = dwarf_getsrc_die(cu, address - bias);
                if (!l)
                        return NULL;
                file = dwarf_linesrc(l, NULL, NULL);
                if (!file || dwarf_lineno(l, &lineno) != 0 || lineno <= 0)
                        return NULL;
                *ret_line = lineno;
                return file;
        }
        return NULL;
}

int timing_symbols_lookup(TimingSymbols *s, uint64_t address, TimingSymbol *ret) {
        TimingSymbol sym = {};
        const Unnamed *newest = NULL;
        Dwfl_Module *mod;
        ModuleInfo *info;

        if (!s || !ret)
                return -EINVAL;
        mod = dwfl_addrmodule(s->dwfl, address);
        info = mod ? module_info(mod) : NULL;
        /* the newest word on a range wins: a mapping that could not be named, recorded after
         * the module there (another file mapped where it was), hides it */
        for (size_t i = s->n_unnamed; i > 0; i--)
                if (address >= s->unnamed[i - 1].start && address < s->unnamed[i - 1].end) {
                        newest = &s->unnamed[i - 1];
                        break;
                }
        if (!info || (newest && newest->seq > info->seq)) {
                sym.reason = newest ? newest->reason :
                             s->overflowed ? s->overflow_reason : "no mapping covers the address";
                sym.file_address = address;
                *ret = sym;
                return 0;
        }
        sym.module = info->path;
        sym.bias = info->bias;
        sym.file_address = address - info->bias;
        sym.stripped = module_stripped(info);
        if (sym.stripped)
                sym.reason = "stripped: no symbol table";
        else {
                GElf_Off offset = 0;
                GElf_Sym elfsym;
                const char *name;

                name = dwfl_module_addrinfo(mod, address, &offset, &elfsym, NULL, NULL, NULL);
                if (name && GELF_ST_TYPE(elfsym.st_info) == STT_FUNC) {
                        sym.function = name;
                        sym.function_start = address - offset;
                        sym.function_size = elfsym.st_size;
                } else
                        sym.reason = "no function symbol covers the address";
        }
        sym.source_file = source_line(mod, address, &sym.line);
        if (!sym.source_file && !sym.reason)
                sym.reason = "no line table (no DWARF, nor a separate debug file)";
        *ret = sym;
        return 0;
}

int timing_symbols_elf(TimingSymbols *s, uint64_t address, Elf **ret_elf, uint64_t *ret_bias) {
        Dwfl_Module *mod;
        Dwarf_Addr bias;
        Elf *elf;

        if (!s || !ret_elf || !ret_bias)
                return -EINVAL;
        mod = dwfl_addrmodule(s->dwfl, address);
        if (!mod || !module_info(mod))
                return -ENOENT;
        elf = dwfl_module_getelf(mod, &bias);
        if (!elf)
                return -ENOENT;
        *ret_elf = elf;
        *ret_bias = bias;
        return 0;
}
