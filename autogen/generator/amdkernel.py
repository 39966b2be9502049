"""Bindings of amdgpu's in-kernel interface headers (linux-source-6.12): the IP discovery table, the firmware
file headers, the PSP GFX interface and the SMU 13.0.0 / 14.0.2 message and table interfaces.

These headers are not uapi: they take their types from the kernel (<linux/types.h> in amdgpu.h) and a few
kernel macros (__packed, DECLARE_FLEX_ARRAY, __printf, u8). kernel_header() writes what they take, as the
kernel defines it for x86-64, into one prelude in the cache; each module's translation unit includes the
prelude and then the amd headers, and cstructs reads it like a uapi header (layouts proven against libclang).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from usergpu.autogen.generator import cstructs, toolchain
from usergpu.autogen.generator.spec import Module

# What amdgpu's headers take from the kernel, for an x86-64 userspace parse with the kernel's layouts.
KERNEL_PRELUDE = """\
/* What amdgpu's headers take from the kernel, for a userspace parse (x86-64, as the kernel builds them).
 * Written by usergpu.autogen.generator.amdkernel; do not edit. */
#ifndef USERGPU_AMD_KERNEL_H
#define USERGPU_AMD_KERNEL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <endian.h>
#include <linux/types.h>
#include <linux/stddef.h>
/* glibc's <endian.h> defines both __LITTLE_ENDIAN and __BIG_ENDIAN; the kernel defines only the host's */
#undef __BIG_ENDIAN
/* display/dc/os_types.h defines it on little-endian hosts; amdgpu_discovery.c's ip_v4 fields need it */
#define LITTLEENDIAN_CPU
#define DECLARE_FLEX_ARRAY(TYPE, NAME) __DECLARE_FLEX_ARRAY(TYPE, NAME)
#define __packed __attribute__((__packed__))
#define __printf(a, b) __attribute__((__format__(printf, a, b)))
#define __counted_by(member)
/* struct amdgpu_firmware embeds one; the generator leaves that struct out, but the parse needs the type whole */
struct mutex { int usergpu_opaque; };
typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int8_t s8;
typedef int16_t s16;
typedef int32_t s32;
typedef int64_t s64;
#endif
"""


def _write(path: Path, text: str) -> Path:
    if not path.exists() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_text(text)
        tmp.replace(path)  # parallel test workers may write it at once
    return path


def kernel_header() -> Path:
    """The prelude (KERNEL_PRELUDE) in the cache."""
    return _write(toolchain.CACHE / "include" / "usergpu_amd_kernel.h", KERNEL_PRELUDE)


@dataclass(frozen=True)
class Interface:
    """One module: the headers it binds (relative to drivers/gpu/drm/amd; what each includes comes along as
    needed by a field), headers only included for a type a field needs, and what of them it leaves out."""

    name: str
    doc: str
    headers: tuple[str, ...]
    support: tuple[str, ...] = ()  # included before headers; nothing of theirs is emitted but the records fields use
    select: str | None = None  # cstructs' select: names to keep

    def paths(self) -> list[Path]:
        return [toolchain.linux_header(h)[0] for h in self.headers]

    def translation_unit(self) -> Path:
        """One header including the prelude, the support headers, then the headers (the parser reads one unit)."""
        amd = toolchain.linux_amd()
        lines = [f'#include "{kernel_header()}"', *(f'#include "{amd / h}"' for h in (*self.support, *self.headers))]
        return _write(toolchain.CACHE / "include" / f"usergpu_{self.name}.h", "\n".join(lines) + "\n")

    def render(self) -> str:
        tu = self.translation_unit()
        inputs = [toolchain.linux_header(h)[1] for h in (*self.headers, *self.support)]
        return cstructs.render(self.doc, [tu, *self.paths()], inputs, select=self.select)


DISCOVERY_DOC = """The IP discovery table amdgpu reads from the top of VRAM (or the discovery firmware file): binary_header
and its table_info list, ip_discovery_header, die_header, the ip / ip_v3 / ip_v4 entries (packed, each followed
by num_base_address base addresses), the gc_info, harvest, vcn, mall and nps tables; BINARY_SIGNATURE,
DISCOVERY_TABLE_SIGNATURE and the other table signatures, the table ids (enum table), DISCOVERY_TMR_SIZE and
DISCOVERY_TMR_OFFSET (amdgpu_discovery.h: the table lies DISCOVERY_TMR_OFFSET bytes below the end of VRAM), and
the hardware ids ip entries carry (GC_HWID, MP1_HWID, ..., soc15_hw_ip.h).

The prelude's LITTLEENDIAN_CPU selects ip_v4's little-endian sub_revision/variant bit fields, as the kernel
does on x86. struct ip_structure holds pointers of the kernel's own parse and is not a table layout."""

UCODE_DOC = """amdgpu's firmware file headers (amdgpu_ucode.h): common_firmware_header (the first 32 bytes of every
amdgpu firmware file) and the per-engine headers that extend it: PSP (psp_firmware_header_v1_0..v2_1 with
psp_fw_bin_desc entries, enum psp_fw_type), TA, gfx (CP), RLC (v1_0..v2_4), MES, SDMA (v1_0..v3_0), SMC
(v1_0..v2_1 and smc_soft_pptable_entry), IMU, VPE, UMSCH, DMCU/DMCUB and gpu_info; union amdgpu_firmware_header;
enum AMDGPU_UCODE_ID (the driver's firmware ids), AMDGPU_UCODE_STATUS and amdgpu_firmware_load_type.

struct amdgpu_firmware and amdgpu_firmware_info (the driver's bookkeeping, with kernel pointers and a mutex)
and struct kicker_device are left out."""

PSP_DOC = """The PSP GFX (TEE) interface (psp_gfx_if.h): the ring frame psp_gfx_rb_frame, the 1 KiB command buffer
psp_gfx_cmd_resp with its psp_gfx_commands union (load TA, invoke, setup TMR, load IP firmware, load TOC, boot
config, ...) and psp_gfx_resp; the control registers' layout psp_gfx_ctrl; enum psp_gfx_crtl_cmd_id
(GFX_CTRL_CMD_ID_*: the commands written to the C2PMSG mailbox), psp_gfx_cmd_id (GFX_CMD_ID_*: the ring
commands), psp_gfx_fw_type (GFX_FW_TYPE_*), tee_error_code, and the GFX_CMD_* masks."""

SMU13_DOC = """SMU 13.0.0 (Navi31, MP1 13.0.0) interface: the PPSMC_MSG_* message ids and PPSMC_Result_* responses
(smu_v13_0_0_ppsmc.h, the messages written to the MP1 C2PMSG mailbox), and the driver interface
(smu13_driver_if_v13_0_0.h, SMU13_0_0_DRIVER_IF_VERSION): the tables moved with TransferTableSmu2Dram/Dram2Smu
(TABLE_* ids: PPTable_t, SmuMetrics_t and SmuMetricsExternal_t, DriverSmuConfig_t, OverDriveTable_t,
Watermarks_t, ...), FEATURE_*_BIT, THROTTLER_*_BIT and the enums; and the VBIOS powerplay table
smu_13_0_0_powerplay_table (smu_v13_0_0_pptable.h; its header is atomfirmware.h's atom_common_table_header).

The firmware's structs are typedefs of untagged structs: each class is named after its typedef and its
_cname_ is the typedef (`SmuMetrics_t`)."""

SMU14_DOC = """SMU 14.0.2 (Navi48, MP1 14.0.2) interface: the PPSMC_MSG_* message ids and PPSMC_Result_* responses
(smu_v14_0_2_ppsmc.h), and the driver interface (smu14_driver_if_v14_0.h; the version the driver checks,
SMU14_DRIVER_IF_VERSION_SMU_V14_0_2, is in the driver-internal smu_v14_0.h, not here): the tables moved with TransferTableSmu2Dram/Dram2Smu (TABLE_* ids: PPTable_t, SmuMetrics_t and
SmuMetricsExternal_t, DriverSmuConfig_t, OverDriveTable_t, ...), FEATURE_*_BIT, THROTTLER_*_BIT and the enums;
and the VBIOS powerplay table smu_14_0_2_powerplay_table (smu_v14_0_2_pptable.h).

The firmware's structs are typedefs of untagged structs: each class is named after its typedef and its
_cname_ is the typedef (`SmuMetrics_t`)."""

SMU13_6_DOC = """SMU 13.0.6 (MI300X, MP1 13.0.6; smu_v13_0_6_ppt.c drives MI350X's 13.0.12 and 13.0.14 with it too)
interface: the PPSMC_MSG_* message ids and PPSMC_Result_* responses (smu_v13_0_6_ppsmc.h, the messages written to
the MP1 C2PMSG mailbox), the firmware's tables (smu_v13_0_6_pmfw.h: the metrics table MetricsTableX_t with per-XCC
activity and clocks, HBM use, socket power and temperatures, Q10 fixed point; FEATURE_* ids) and the driver
interface (smu13_driver_if_v13_0_6.h: SMU13_0_6_DRIVER_IF_VERSION, the PPCLK_* clock ids of the frequency messages).

The firmware's structs are typedefs of untagged structs: each class is named after its typedef and its
_cname_ is the typedef (`MetricsTableX_t`)."""

INTERFACES = [
    Interface("amd_discovery", DISCOVERY_DOC,
              ("include/discovery.h", "amdgpu/amdgpu_discovery.h", "include/soc15_hw_ip.h")),
    Interface("amdgpu_ucode", UCODE_DOC, ("amdgpu/amdgpu_ucode.h", "amdgpu/amdgpu_socbb.h"),
              select=r"^(?!(struct_)?(amdgpu_firmware|amdgpu_firmware_info|kicker_device)$)"),
    Interface("psp_gfx_if", PSP_DOC, ("amdgpu/psp_gfx_if.h",)),
    Interface("smu_v13_0_0", SMU13_DOC,
              ("pm/swsmu/inc/pmfw_if/smu_v13_0_0_ppsmc.h", "pm/swsmu/inc/pmfw_if/smu13_driver_if_v13_0_0.h",
               "pm/inc/smu_v13_0_0_pptable.h"),
              support=("include/atomfirmware.h",)),
    Interface("smu_v13_0_6", SMU13_6_DOC,
              ("pm/swsmu/inc/pmfw_if/smu_v13_0_6_ppsmc.h", "pm/swsmu/inc/pmfw_if/smu_v13_0_6_pmfw.h",
               "pm/swsmu/inc/pmfw_if/smu13_driver_if_v13_0_6.h")),
    Interface("smu_v14_0_2", SMU14_DOC,
              ("pm/swsmu/inc/pmfw_if/smu_v14_0_2_ppsmc.h", "pm/swsmu/inc/pmfw_if/smu14_driver_if_v14_0.h",
               "pm/swsmu/inc/smu_v14_0_2_pptable.h"),
              support=("include/atomfirmware.h",)),
]

MODULES: list[Module] = [Module(i.name, toolchain.LINUX_SOURCE, i.render) for i in INTERFACES]
