/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pmugate timing: disassembly of a file's code range with capstone
 */
#include <capstone/capstone.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "timing/timing-disasm.h"

/* The longest instruction: x86's 15 bytes (AArch64's are 4). The bytes read run this far
 * past end, so that the instruction at end decodes whole. */
#define INSN_BYTES_MAX 15U

static int refuse(TimingDisasm *d, int error, const char *fmt, ...) _printf_(3, 4);
static int refuse(TimingDisasm *d, int error, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        (void) vsnprintf(d->reason, sizeof(d->reason), fmt, ap);
        va_end(ap);
        return error;
}

/* The file's bytes at file address start, up to *ret_size of them: from the allocated,
 * executable section holding start, else the PT_LOAD segment. */
static int code_bytes(Elf *elf, uint64_t start, const uint8_t **ret_bytes, uint64_t *ret_size) {
        Elf_Scn *scn = NULL;
        size_t n_phdrs, raw_size;
        const uint8_t *raw;

        while ((scn = elf_nextscn(elf, scn))) {
                GElf_Shdr sh;
                Elf_Data *data;

                if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || !(sh.sh_flags & SHF_ALLOC) ||
                    !(sh.sh_flags & SHF_EXECINSTR))
                        continue;
                if (start < sh.sh_addr || start - sh.sh_addr >= sh.sh_size)
                        continue;
                data = elf_getdata(scn, NULL);
                /* libelf gives a section's bytes only as far as the file holds them */
                if (!data || !data->d_buf || data->d_size != sh.sh_size)
                        return -ENOENT;
                *ret_bytes = (const uint8_t *) data->d_buf + (start - sh.sh_addr);
                *ret_size = sh.sh_size - (start - sh.sh_addr);
                return 0;
        }

        raw = (const uint8_t *) elf_rawfile(elf, &raw_size);
        if (!raw || elf_getphdrnum(elf, &n_phdrs) < 0)
                return -ENOENT;
        for (size_t i = 0; i < n_phdrs; i++) {
                GElf_Phdr ph;

                if (!gelf_getphdr(elf, (int) i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
                        continue;
                if (start < ph.p_vaddr || start - ph.p_vaddr >= ph.p_filesz)
                        continue;
                if (ph.p_offset > raw_size || ph.p_filesz > raw_size - ph.p_offset)
                        return -ENOENT;
                *ret_bytes = raw + ph.p_offset + (start - ph.p_vaddr);
                *ret_size = ph.p_filesz - (start - ph.p_vaddr);
                return 0;
        }
        return -ENOENT;
}

int timing_disasm(Elf *elf, uint64_t start, uint64_t end, TimingDisasm *ret) {
        GElf_Ehdr ehdr;
        cs_arch arch;
        cs_mode mode;
        csh handle;
        cs_insn *insn;
        const uint8_t *bytes, *code;
        uint64_t avail, address;
        size_t code_size;
        int r;

        if (!ret)
                return -EINVAL;
        *ret = (TimingDisasm) {};
        if (!elf)
                return refuse(ret, -EINVAL, "no file");
        if (end < start || end - start >= TIMING_DISASM_BYTES_MAX)
                return refuse(ret, -ERANGE, "0x%llx-0x%llx is no block: longer than %u bytes or reversed",
                              (unsigned long long) start, (unsigned long long) end, TIMING_DISASM_BYTES_MAX);
        if (!gelf_getehdr(elf, &ehdr))
                return refuse(ret, -ENOENT, "not an ELF file: %s", elf_errmsg(-1));
        switch (ehdr.e_machine) {
        case EM_X86_64:
                arch = CS_ARCH_X86;
                mode = CS_MODE_64;
                break;
        case EM_AARCH64:
                arch = CS_ARCH_ARM64;
                mode = CS_MODE_ARM;
                break;
        default:
                return refuse(ret, -EOPNOTSUPP, "no disassembler for machine %u (x86-64 and AArch64 only)",
                              (unsigned) ehdr.e_machine);
        }
        r = code_bytes(elf, start, &bytes, &avail);
        if (r < 0)
                return refuse(ret, r, "the file holds no code at 0x%llx", (unsigned long long) start);
        if (avail <= end - start)
                return refuse(ret, -ENOENT, "the file's code ends before 0x%llx", (unsigned long long) end);

        if (cs_open(arch, mode, &handle) != CS_ERR_OK)
                return refuse(ret, -ENOMEM, "capstone cannot open its %s decoder",
                              arch == CS_ARCH_X86 ? "x86-64" : "AArch64");
        insn = cs_malloc(handle);
        /* every instruction is at least one byte: no more than the range's bytes of them */
        ret->insns = calloc((size_t) (end - start + 1), sizeof(*ret->insns));
        if (!insn || !ret->insns) {
                if (insn)
                        cs_free(insn, 1);
                (void) cs_close(&handle);
                return refuse(ret, -ENOMEM, "out of memory");
        }
        code = bytes;
        code_size = (size_t) MIN(avail, end - start + 1 + INSN_BYTES_MAX);
        address = start;
        r = 0;
        while (address <= end) {
                TimingInsn *t;

                if (!cs_disasm_iter(handle, &code, &code_size, &address, insn)) {
                        r = refuse(ret, -EBADMSG, "no instruction decodes at 0x%llx",
                                   (unsigned long long) address);
                        break;
                }
                t = &ret->insns[ret->n++];
                t->address = insn->address;
                t->size = (uint8_t) insn->size;
                (void) snprintf(t->mnemonic, sizeof(t->mnemonic), "%s", insn->mnemonic);
                (void) snprintf(t->operands, sizeof(t->operands), "%s", insn->op_str);
                ret->ends_at_end = insn->address == end;
        }
        cs_free(insn, 1);
        (void) cs_close(&handle);
        return r;
}

void timing_disasm_done(TimingDisasm *d) {
        if (!d)
                return;
        free(d->insns);
        d->insns = NULL;
        d->n = 0;
}
