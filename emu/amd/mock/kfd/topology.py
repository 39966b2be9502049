"""The topology amdkfd publishes for a node of a CDNA part (cdna.py), in the partition mode the machine runs: a node
per compute partition (kfd_device.c makes one kfd_node per XCP; SPX: one node of all eight XCCs, CPX: eight nodes
of one XCC each), each the properties amdkfd's virtual CRAT and kfd_topology_add_device give it and the caches of
kfd_fill_cache_non_crat_info.

From linux 6.12 (kfd_crat.c kfd_create_vcrat_image_gpu, kfd_topology.c node_show and kfd_topology_add_device):
simd_count is simd_per_cu times the GPU's active CUs over its nodes; the CRAT's array_count is the shader arrays of
one XCC (max_sh_per_se * max_shader_engines) and node_show prints it times the node's XCCs; cu_per_simd_array is
max_cu_per_sh; a node's simd_id_base is the processor id get_and_inc_gpu_processor_id hands out from 0x80001000,
moving on by one XCC's arrays times max_cu_per_sh per node; location_id is the PCI device id, with the node's id in
its low bits when the GPU has several nodes; num_sdma_engines is min(instances / nodes, 2) on an XGMI-capable part
(kfd_get_num_sdma_engines) and the rest are XGMI engines; num_sdma_queues_per_engine 8 for SDMA 4.4.x
(kfd_device_info_set_sdma_info); num_cp_queues the queues of the first MEC (4 pipes of 8 queues, gfx_v9_4_3.c) the
driver's 8 kernel compute queues leave; num_gws gds.gws_size (64); local_mem_size 0 (node_show prints 0); capability
the ASIC revision (HSA_CAP_ASIC_REVISION, kfd_sysfs.h)."""

from __future__ import annotations

from usergpu.emu.amd.mock.cdna import Part

PROCESSOR_ID_BASE = 0x80001000  # kfd_crat.c: gpu_processor_id_low's first value
CP_QUEUES = 4 * 8 - 8  # MEC 0's pipes x queues, less amdgpu_num_kcq's 8 kernel compute queues
ASIC_REVISION_SHIFT = 22  # HSA_CAP_ASIC_REVISION_SHIFT
# kfd_sysfs.h's HSA_CACHE_TYPE_* and the CRAT flags they come from (kfd_crat.h CRAT_CACHE_FLAGS_*)
DATA, INSTRUCTION, HSACU = 1, 2, 8
SIBLING_BYTES = 4  # fill_in_l1_pcache: a sibling map of four bytes (32 CUs)


def properties(part: Part, node: int, partition: int, partitions: int, gpu: int, pci: int) -> dict[str, int]:
    """The properties of topology node `node` (counted from the machine's first GPU node): partition `partition` of
    `partitions` of GPU `gpu`, whose PCI function is `pci` (bus << 8 | devfn). cwsr_size and ctl_stack_size are the
    caller's (kfd_queue.c)."""
    xccs = part.xccs // partitions
    instances = part.sdma_instances // partitions
    sdma = min(instances, 2)
    return {
        "cpu_cores_count": 0, "simd_count": part.simd_per_cu * part.cus_per_xcc * part.xccs // partitions,
        "mem_banks_count": 1, "caches_count": len(caches(part, node, xccs)), "io_links_count": 0,
        "p2p_links_count": 0, "cpu_core_id_base": 0, "simd_id_base": processor_id(part, node),
        "max_waves_per_simd": part.waves_per_simd, "lds_size_in_kb": part.lds_kb, "gds_size_in_kb": 0, "num_gws": 64,
        "wave_front_size": part.wave_size, "array_count": part.sh_per_se * part.ses * xccs,
        "simd_arrays_per_engine": part.sh_per_se, "cu_per_simd_array": part.cus_per_sh,
        "simd_per_cu": part.simd_per_cu, "max_slots_scratch_cu": part.scratch_slots_per_cu,
        "gfx_target_version": part.gfx_target_version, "vendor_id": 0x1002, "device_id": part.device_id,
        "location_id": pci | (partition if partitions > 1 else 0), "domain": 0, "drm_render_minor": 128 + node,
        "hive_id": 0, "num_sdma_engines": sdma, "num_sdma_xgmi_engines": instances - sdma,
        "num_sdma_queues_per_engine": 8, "num_cp_queues": CP_QUEUES, "max_engine_clk_fcompute": part.engine_mhz,
        "local_mem_size": 0, "fw_version": part.mec_fw, "capability": part.rev_id << ASIC_REVISION_SHIFT,
        "sdma_fw_version": part.sdma_fw, "unique_id": 0x1000 + gpu, "num_xcc": xccs, "max_engine_clk_ccompute": 3000,
    }


def processor_id(part: Part, node: int) -> int:
    """get_and_inc_gpu_processor_id's value for the node: the ids of the nodes before it, one XCC's worth each."""
    return PROCESSOR_ID_BASE + node * part.ses * part.sh_per_se * part.cus_per_sh


def caches(part: Part, node: int, xccs: int) -> list[dict[str, int | str]]:
    """kfd_fill_cache_non_crat_info with kfd_fill_gpu_cache_info_from_gfx_config_v2's table: the vector L1 of every
    active CU, an instruction and a scalar cache per group of cu_per_sqc CUs with an active one, one L2 and one L3
    (kernel 6.12 publishes a single L2 for the node, its size one XCC's gc_tcc_size). Each is its sysfs properties
    (kfd_cache_show), the sibling map as the bit list it prints."""
    l1 = [(part.tcp_kb, 128, DATA | HSACU, 1), (part.sqc_inst_kb, 64, INSTRUCTION | HSACU, part.cu_per_sqc),
          (part.sqc_data_kb, 64, DATA | HSACU, part.cu_per_sqc)]
    out = []
    for size, line, kind, shared in l1:
        pid = processor_id(part, node)
        for _ in range(xccs):
            for mask in part.active:  # one array per engine: bitmap[xcc][se][0]
                for k in range(0, part.cus_per_sh, shared):
                    siblings = mask >> k & (1 << shared) - 1
                    if siblings:
                        first = (siblings & -siblings).bit_length() - 1
                        out.append(_cache(pid + first, 1, size, line, kind, siblings >> first, SIBLING_BYTES))
                    pid += min(shared, part.cus_per_sh - k)
    maps = [mask for _ in range(xccs) for mask in part.active]
    for level, size, line in ((2, part.tcc_kb, 128), (3, part.mall_mb << 10, 64)):
        # fill_in_l2_l3_pcache: four bytes per array of the node, the first its first engine's bitmap from its first
        # active CU, then each array's from the first on, one behind (sic: the last array's is never written)
        first = (maps[0] & -maps[0]).bit_length() - 1
        siblings = [maps[0] >> first] + maps[:-1]
        bits = sum(m << 32 * i for i, m in enumerate(siblings))
        out.append(_cache(processor_id(part, node) + first, level, size, line, DATA | HSACU, bits,
                          SIBLING_BYTES * len(siblings)))
    return out


def _cache(pid: int, level: int, size: int, line: int, kind: int, siblings: int, nbytes: int) -> dict:
    return {"processor_id_low": pid, "level": level, "size": size, "cache_line_size": line, "cache_lines_per_tag": 0,
            "association": 0, "latency": 0, "type": kind,
            "sibling_map": ",".join(str(siblings >> i & 1) for i in range(8 * nbytes))}
