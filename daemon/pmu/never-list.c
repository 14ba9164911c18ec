/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The built-in never-list
 */
#include <stddef.h>

#include "macro.h"
#include "pmu/never-list.h"

/*
 * Sorted, non-overlapping: never_list_lookup() binary-searches it. Each entry is here because a
 * write (and for some a read) can escalate privilege, corrupt the kernel's own state, hide or
 * fake hardware errors, or change power and frequency policy for every user of the machine;
 * docs/ALLOWLISTS.md gives the reason per entry. Reads are refused too: none of these is needed
 * to count events, and refusing both keeps the rule simple enough to audit. The exceptions are
 * NEVER_WRITE: registers a monitoring tool reads (the TSC, TjMax, TDP and turbo levels, HWP
 * capabilities) and whose contents describe the machine, not anyone's work.
 */
static const NeverEntry never_list[] = {
        { 0x00000010, 0x00000010, "IA32_TIME_STAMP_COUNTER", NEVER_WRITE },
        { 0x0000001B, 0x0000001B, "IA32_APIC_BASE" },
        { 0x0000003A, 0x0000003A, "IA32_FEATURE_CONTROL" },
        { 0x0000003B, 0x0000003B, "IA32_TSC_ADJUST" },
        { 0x00000048, 0x00000048, "IA32_SPEC_CTRL" },
        { 0x00000049, 0x00000049, "IA32_PRED_CMD" },
        { 0x00000079, 0x00000079, "IA32_BIOS_UPDT_TRIG" },
        /* The launch-enclave key hash SGX trusts. */
        { 0x0000008C, 0x0000008F, "IA32_SGXLEPUBKEYHASH0-3" },
        { 0x0000009B, 0x0000009B, "IA32_SMM_MONITOR_CTL" },
        { 0x0000009E, 0x0000009E, "IA32_SMBASE" },
        /* The longest wait TPAUSE and UMWAIT may take, for every process on the CPU. */
        { 0x000000E1, 0x000000E1, "IA32_UMWAIT_CONTROL" },
        /* Package C-state limit and its lock. */
        { 0x000000E2, 0x000000E2, "MSR_PKG_CST_CONFIG_CONTROL" },
        { 0x0000010A, 0x0000010A, "IA32_ARCH_CAPABILITIES" },
        { 0x0000010B, 0x0000010B, "IA32_FLUSH_CMD" },
        { 0x00000122, 0x00000122, "IA32_TSX_CTRL" },
        { 0x00000123, 0x00000123, "IA32_MCU_OPT_CTRL" },
        { 0x00000174, 0x00000174, "IA32_SYSENTER_CS" },
        { 0x00000175, 0x00000175, "IA32_SYSENTER_ESP" },
        { 0x00000176, 0x00000176, "IA32_SYSENTER_EIP" },
        { 0x00000179, 0x00000179, "IA32_MCG_CAP" },
        { 0x0000017A, 0x0000017A, "IA32_MCG_STATUS" },
        { 0x0000017B, 0x0000017B, "IA32_MCG_CTL" },
        { 0x00000199, 0x00000199, "IA32_PERF_CTL" },
        { 0x0000019A, 0x0000019A, "IA32_CLOCK_MODULATION" },
        { 0x0000019B, 0x0000019B, "IA32_THERM_INTERRUPT" },
        { 0x000001A0, 0x000001A0, "IA32_MISC_ENABLE" },
        { 0x000001A2, 0x000001A2, "MSR_TEMPERATURE_TARGET", NEVER_WRITE },
        /* The hardware prefetchers: every user's memory performance on the core. */
        { 0x000001A4, 0x000001A4, "MSR_MISC_FEATURE_CONTROL" },
        { 0x000001AD, 0x000001AD, "MSR_TURBO_RATIO_LIMIT" },
        { 0x000001AE, 0x000001AE, "MSR_TURBO_RATIO_LIMIT1" },
        { 0x000001AF, 0x000001AF, "MSR_TURBO_RATIO_LIMIT2" },
        { 0x000001B0, 0x000001B0, "IA32_ENERGY_PERF_BIAS" },
        { 0x000001B2, 0x000001B2, "IA32_PACKAGE_THERM_INTERRUPT" },
        /* Extended feature disable (AMX): the kernel traps first use of a state component. */
        { 0x000001C4, 0x000001C4, "IA32_XFD" },
        { 0x000001C5, 0x000001C5, "IA32_XFD_ERR" },
        { 0x000001C8, 0x000001C8, "MSR_LBR_SELECT" },
        { 0x000001C9, 0x000001C9, "MSR_LASTBRANCH_TOS" },
        { 0x000001D9, 0x000001D9, "IA32_DEBUGCTL" },
        { 0x000001DB, 0x000001DB, "MSR_LASTBRANCH_FROM_IP" },
        { 0x000001DC, 0x000001DC, "MSR_LASTBRANCH_TO_IP" },
        { 0x000001DD, 0x000001DD, "MSR_LER_FROM_IP" },
        { 0x000001DE, 0x000001DE, "MSR_LER_TO_IP" },
        { 0x000001FC, 0x000001FC, "MSR_POWER_CTL" },
        { 0x00000200, 0x0000021F, "IA32_MTRR_PHYS" },
        { 0x00000250, 0x00000250, "IA32_MTRR_FIX64K_00000" },
        { 0x00000258, 0x00000259, "IA32_MTRR_FIX16K" },
        { 0x00000268, 0x0000026F, "IA32_MTRR_FIX4K" },
        { 0x00000277, 0x00000277, "IA32_PAT" },
        { 0x00000280, 0x0000029F, "IA32_MCi_CTL2" },
        { 0x000002FF, 0x000002FF, "IA32_MTRR_DEF_TYPE" },
        { 0x000003F1, 0x000003F1, "IA32_PEBS_ENABLE" },
        { 0x000003F2, 0x000003F2, "MSR_PEBS_DATA_CFG" },
        { 0x000003F6, 0x000003F6, "MSR_PEBS_LD_LAT" },
        { 0x000003F7, 0x000003F7, "MSR_PEBS_FRONTEND" },
        /* Banks 0-31, four registers each: CTL, STATUS, ADDR, MISC. */
        { 0x00000400, 0x0000047F, "IA32_MCi_CTL/STATUS/ADDR/MISC" },
        { 0x00000560, 0x00000560, "IA32_RTIT_OUTPUT_BASE" },
        { 0x00000561, 0x00000561, "IA32_RTIT_OUTPUT_MASK_PTRS" },
        { 0x00000570, 0x00000570, "IA32_RTIT_CTL" },
        { 0x00000571, 0x00000571, "IA32_RTIT_STATUS" },
        { 0x00000572, 0x00000572, "IA32_RTIT_CR3_MATCH" },
        { 0x00000580, 0x00000587, "IA32_RTIT_ADDR" },
        { 0x00000600, 0x00000600, "IA32_DS_AREA" },
        { 0x00000610, 0x00000610, "MSR_PKG_POWER_LIMIT" },
        { 0x00000618, 0x00000618, "MSR_DRAM_POWER_LIMIT" },
        { 0x00000620, 0x00000620, "MSR_UNCORE_RATIO_LIMIT" },
        { 0x00000638, 0x00000638, "MSR_PP0_POWER_LIMIT" },
        { 0x00000640, 0x00000640, "MSR_PP1_POWER_LIMIT" },
        { 0x0000064B, 0x0000064B, "MSR_CONFIG_TDP_CONTROL", NEVER_WRITE },
        { 0x0000064C, 0x0000064C, "MSR_TURBO_ACTIVATION_RATIO", NEVER_WRITE },
        { 0x0000065C, 0x0000065C, "MSR_PLATFORM_POWER_LIMIT" },
        { 0x00000680, 0x0000069F, "MSR_LASTBRANCH_FROM_IP" },
        { 0x000006A0, 0x000006A0, "IA32_U_CET" },
        { 0x000006A2, 0x000006A2, "IA32_S_CET" },
        { 0x000006A4, 0x000006A7, "IA32_PL_SSP" },
        { 0x000006A8, 0x000006A8, "IA32_INTERRUPT_SSP_TABLE_ADDR" },
        { 0x000006C0, 0x000006DF, "MSR_LASTBRANCH_TO_IP" },
        { 0x000006E0, 0x000006E0, "IA32_TSC_DEADLINE" },
        { 0x000006E1, 0x000006E1, "IA32_PKRS" },
        { 0x00000770, 0x00000770, "IA32_PM_ENABLE" },
        { 0x00000771, 0x00000771, "IA32_HWP_CAPABILITIES", NEVER_WRITE },
        { 0x00000772, 0x00000772, "IA32_HWP_REQUEST_PKG" },
        { 0x00000773, 0x00000773, "IA32_HWP_INTERRUPT" },
        { 0x00000774, 0x00000774, "IA32_HWP_REQUEST" },
        { 0x00000775, 0x00000775, "IA32_PECI_HWP_REQUEST_INFO" },
        { 0x00000776, 0x00000776, "IA32_HWP_CTL" },
        { 0x00000777, 0x00000777, "IA32_HWP_STATUS" },
        { 0x00000800, 0x000008FF, "IA32_X2APIC" },
        /* MPX bounds configuration of the kernel, and the process address space id of ENQCMD. */
        { 0x00000D90, 0x00000D90, "IA32_BNDCFGS" },
        { 0x00000D93, 0x00000D93, "IA32_PASID" },
        { 0x00000DA0, 0x00000DA0, "IA32_XSS" },
        /* Hardware duty cycling: forced idle of the package and its threads. */
        { 0x00000DB0, 0x00000DB0, "IA32_PKG_HDC_CTL" },
        { 0x00000DB1, 0x00000DB1, "IA32_PM_CTL1" },
        { 0x00000DB2, 0x00000DB2, "IA32_THREAD_STALL" },
        { 0x00000DC0, 0x00000DDF, "MSR_LBR_INFO" },
        { 0x00001200, 0x0000121F, "MSR_ARCH_LBR_INFO" },
        { 0x00001309, 0x0000130C, "MSR_RELOAD_FIXED_CTR" },
        { 0x000014C1, 0x000014C8, "MSR_RELOAD_PMC" },
        { 0x000014CE, 0x000014CE, "MSR_ARCH_LBR_CTL" },
        { 0x000014CF, 0x000014CF, "MSR_ARCH_LBR_DEPTH" },
        /* Up to the TO block, so no address in the arch-LBR window is left to a data file. */
        { 0x00001500, 0x000015FF, "MSR_ARCH_LBR_FROM_IP" },
        { 0x00001600, 0x0000161F, "MSR_ARCH_LBR_TO_IP" },
        { 0xC0000080, 0xC0000080, "IA32_EFER" },
        { 0xC0000081, 0xC0000081, "MSR_STAR" },
        { 0xC0000082, 0xC0000082, "MSR_LSTAR" },
        { 0xC0000083, 0xC0000083, "MSR_CSTAR" },
        { 0xC0000084, 0xC0000084, "MSR_SFMASK" },
        { 0xC0000100, 0xC0000100, "IA32_FS_BASE" },
        { 0xC0000101, 0xC0000101, "IA32_GS_BASE" },
        { 0xC0000102, 0xC0000102, "IA32_KERNEL_GS_BASE" },
        { 0xC0000103, 0xC0000103, "IA32_TSC_AUX" },
        { 0xC0000104, 0xC0000104, "AMD_TSC_RATIO" },
        /* LBR v2 filter and the debug extension that freezes it (Zen 4). */
        { 0xC000010E, 0xC000010E, "AMD_LBR_SELECT" },
        { 0xC000010F, 0xC000010F, "AMD_DBG_EXTN_CFG" },
        /* PerfMonV2 PerfCntrGlobalStatusSet: sets overflow bits, i.e. fakes interrupts for
         * counters the kernel's perf may own. Read like the status it mirrors. */
        { 0xC0000303, 0xC0000303, "AMD_PERF_CNTR_GLOBAL_STATUS_SET", NEVER_WRITE },
        { 0xC0000410, 0xC0000410, "AMD_MCA_INTR_CFG" },
        /* Scalable MCA banks. */
        { 0xC0002000, 0xC0002FFF, "AMD_SMCA_MCi" },
        { 0xC0010010, 0xC0010010, "AMD_SYSCFG" },
        { 0xC0010015, 0xC0010015, "AMD_HWCR" },
        /* I/O range registers, top of memory and TOM2: the physical memory map. */
        { 0xC0010016, 0xC001001A, "AMD_IORR/TOP_MEM" },
        { 0xC001001D, 0xC001001D, "AMD_TOP_MEM2" },
        { 0xC001001F, 0xC001001F, "AMD_NB_CFG" },
        { 0xC0010020, 0xC0010020, "AMD_PATCH_LOADER" },
        { 0xC0010058, 0xC0010058, "AMD_MMIO_CONF_BASE" },
        /* P-state limit, control and status; the P-state definitions set voltage and
         * frequency. Readable: they describe the machine. */
        { 0xC0010061, 0xC001006B, "AMD_PSTATE", NEVER_WRITE },
        { 0xC0010073, 0xC0010073, "AMD_CSTATE_BASE_ADDR" },
        { 0xC0010074, 0xC0010074, "AMD_CPU_WATCHDOG" },
        { 0xC0010111, 0xC0010111, "AMD_SMM_BASE" },
        /* The TSeg: base and mask of SMRAM. */
        { 0xC0010112, 0xC0010112, "AMD_SMM_ADDR" },
        { 0xC0010113, 0xC0010113, "AMD_SMM_MASK" },
        { 0xC0010114, 0xC0010114, "AMD_VM_CR" },
        { 0xC0010115, 0xC0010115, "AMD_IGNNE" },
        { 0xC0010116, 0xC0010116, "AMD_SMM_CTL" },
        { 0xC0010117, 0xC0010117, "AMD_VM_HSAVE_PA" },
        { 0xC0010118, 0xC0010118, "AMD_SVM_KEY" },
        { 0xC001011F, 0xC001011F, "AMD_VIRT_SPEC_CTRL" },
        /* SEV-ES GHCB, SEV status, the SNP reverse map table. */
        { 0xC0010130, 0xC0010130, "AMD_SEV_ES_GHCB" },
        { 0xC0010131, 0xC0010131, "AMD_SEV_STATUS" },
        { 0xC0010132, 0xC0010133, "AMD_RMP_BASE/END" },
        { 0xC0010140, 0xC0010141, "AMD_OSVW" },
        /* CPPC: capabilities are read, enable and request set frequency policy. */
        { 0xC00102B0, 0xC00102B0, "AMD_CPPC_CAP1", NEVER_WRITE },
        { 0xC00102B1, 0xC00102B1, "AMD_CPPC_ENABLE" },
        { 0xC00102B2, 0xC00102B2, "AMD_CPPC_CAP2", NEVER_WRITE },
        { 0xC00102B3, 0xC00102B3, "AMD_CPPC_REQ" },
        { 0xC00102B4, 0xC00102B4, "AMD_CPPC_STATUS", NEVER_WRITE },
        /* PPIN control can lock the inventory number off until reset. */
        { 0xC00102F0, 0xC00102F0, "AMD_PPIN_CTL", NEVER_WRITE },
        /* Branch sampling and LBR v2 records: kernel addresses. */
        { 0xC0010300, 0xC001031F, "AMD_SAMP_BR_FROM/TO" },
        /* CPUID feature overrides. */
        { 0xC0011004, 0xC0011005, "AMD_CPUID_FEATURES" },
        { 0xC0011020, 0xC0011020, "AMD_LS_CFG" },
        { 0xC0011021, 0xC0011021, "AMD_IC_CFG" },
        { 0xC0011022, 0xC0011022, "AMD_DC_CFG" },
        { 0xC0011023, 0xC0011023, "AMD_TW_CFG" },
        /* The rest of the core configuration block: errata and speculation chicken bits the
         * PPRs document per model (or leave reserved), and the DR0 breakpoint address mask. */
        { 0xC0011024, 0xC0011026, "AMD_CORE_CFG" },
        { 0xC0011027, 0xC0011027, "AMD_DR0_ADDR_MASK" },
        { 0xC0011028, 0xC0011028, "AMD_FP_CFG" },
        { 0xC0011029, 0xC0011029, "AMD_DE_CFG" },
        { 0xC001102A, 0xC001102A, "AMD_BU_CFG2" },
        { 0xC001102B, 0xC001102D, "AMD_CORE_CFG" },
        { 0xC001102E, 0xC001102E, "AMD_BP_CFG" },
        { 0xC001102F, 0xC001102F, "AMD_CORE_CFG" },
        /* Instruction-based sampling: physical and linear addresses of every sampled op, up
         * to the op data and extended control registers of newer models. */
        { 0xC0011030, 0xC001103F, "AMD_IBS" },
};

const char *never_list_lookup(uint32_t msr, bool write) {
        size_t lo = 0, hi = ELEMENTSOF(never_list);

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (msr < never_list[mid].first)
                        hi = mid;
                else if (msr > never_list[mid].last)
                        lo = mid + 1;
                else
                        return write || never_list[mid].kind == NEVER_ACCESS ? never_list[mid].name : NULL;
        }
        return NULL;
}

const NeverEntry *never_list_overlap(uint32_t first, uint32_t last, bool writable) {
        for (size_t i = 0; i < ELEMENTSOF(never_list); i++)
                if (never_list[i].first <= last && never_list[i].last >= first &&
                    (writable || never_list[i].kind == NEVER_ACCESS))
                        return &never_list[i];
        return NULL;
}
