"""The copy classes: AMPERE_DMA_COPY_A/B (c6b5, c7b5), HOPPER_DMA_COPY_A (c8b5) and BLACKWELL_DMA_COPY_A/B (c9b5,
cab5), each with its own header's methods (open-gpu-doc's: from c8b5 on, OFFSET_IN/OUT_UPPER and SET_SEMAPHORE_A
hold 25 address bits, not 17).

LAUNCH_DMA runs what the methods before it set: a pitch-linear copy of LINE_LENGTH_IN bytes from OFFSET_IN to
OFFSET_OUT (LINE_COUNT lines PITCH_IN / PITCH_OUT apart with MULTI_LINE_ENABLE), through the component remap when
REMAP_ENABLE is set (LINE_LENGTH_IN then counts elements; constants A and B fill a buffer), then the semaphore
release SEMAPHORE_TYPE asks for at SET_SEMAPHORE_A/B: one word (the payload, 8 bytes with c7b5's TWO_WORD payload
size) or four words (the payload, then the GPU's ns clock at +8), or its reduction, then the interrupt.
Block-linear layouts, physical addresses and memory scrubbing are not modelled: they are channel errors.
"""

from __future__ import annotations

import numpy as np

from usergpu.autogen import nv_classes as nc
from usergpu.autogen import nv_rm_535 as rm
from usergpu.emu.nv.mock.engine import Engine, named
from usergpu.emu.nv.mock.host import reductions, release

_B = nc.BLACKWELL_CLASSES
CHAINS = {nc.AMPERE_DMA_COPY_A: ("NVC6B5",), nc.AMPERE_DMA_COPY_B: ("NVC7B5",), nc.HOPPER_DMA_COPY_A: ("NVC8B5",),
          _B["BLACKWELL_DMA_COPY_A"]: ("NVC9B5",), _B["BLACKWELL_DMA_COPY_B"]: ("NVCAB5",)}

_D = "NVC6B5_LAUNCH_DMA_"
SEMAPHORE = named(f"{_D}SEMAPHORE_TYPE_", ("NONE", "RELEASE_ONE_WORD_SEMAPHORE", "RELEASE_FOUR_WORD_SEMAPHORE"))
REDUCTION = reductions(f"{_D}SEMAPHORE_REDUCTION_", "I")
# LAUNCH_DMA fields whose other values the mock does not model -> the value it models
PLAIN = {"SRC_TYPE": nc.NVC6B5_LAUNCH_DMA_SRC_TYPE_VIRTUAL, "DST_TYPE": nc.NVC6B5_LAUNCH_DMA_DST_TYPE_VIRTUAL,
         "MEMORY_SCRUB_ENABLE": 0}
_PITCH = nc.NVC6B5_LAUNCH_DMA_SRC_MEMORY_LAYOUT_PITCH
_R = "NVC6B5_SET_REMAP_COMPONENTS_DST_X_"
SOURCE = named(_R, ("SRC_X", "SRC_Y", "SRC_Z", "SRC_W"))
CONST = named(_R, ("CONST_A", "CONST_B"))
NO_WRITE = getattr(nc, f"{_R}NO_WRITE")


class CopyEngine(Engine):
    chains = CHAINS
    code = rm.ROBUST_CHANNEL_CE0_ERROR
    unmodelled = ("SET_MONITORED_FENCE", "SET_RENDER_ENABLE_C")

    def _address(self, method: str) -> int:
        return self.field(f"{method}_UPPER", "UPPER") << 32 | self.field(f"{method}_LOWER", "VALUE")

    def _launch_dma(self, value: int) -> None:
        f = self.fields("LAUNCH_DMA", value)
        for name, plain in PLAIN.items():
            if f.get(name, plain) != plain:
                raise self.fail(f"LAUNCH_DMA {name} = {f[name]} is not modelled by the mock GPU (it copies between "
                                "virtual addresses)")
        if f["DATA_TRANSFER_TYPE"] != nc.NVC6B5_LAUNCH_DMA_DATA_TRANSFER_TYPE_NONE:
            if f["SRC_MEMORY_LAYOUT"] != _PITCH or f["DST_MEMORY_LAYOUT"] != _PITCH:
                raise self.fail("a block-linear copy is not modelled by the mock GPU (pitch layouts only)")
            self._copy(f["MULTI_LINE_ENABLE"] == nc.NVC6B5_LAUNCH_DMA_MULTI_LINE_ENABLE_TRUE,
                       f["REMAP_ENABLE"] == nc.NVC6B5_LAUNCH_DMA_REMAP_ENABLE_TRUE)
        self._semaphore(f)
        if f.get("INTERRUPT_TYPE", 0) != nc.NVC6B5_LAUNCH_DMA_INTERRUPT_TYPE_NONE:
            self.channel.interrupt()

    def _copy(self, multi_line: bool, remap: bool) -> None:
        src, dst = self._address("OFFSET_IN"), self._address("OFFSET_OUT")
        length = self.field("LINE_LENGTH_IN", "VALUE")
        lines = self.field("LINE_COUNT", "VALUE") if multi_line else 1
        pitch_in, pitch_out = (self.field(f"PITCH_{d}", "VALUE") for d in ("IN", "OUT")) if multi_line else (0, 0)
        chip = self.gpu.chip
        rate = chip.bus_rate if self.vas.over_bus(src) or self.vas.over_bus(dst) else chip.copy_rate
        with self.gpu.modelled(length * lines / rate):  # the board's time for the bytes (gpu.py's clock)
            for line in range(lines):
                if remap:
                    self._remap(dst + line * pitch_out, src + line * pitch_in, length)
                else:
                    self.vas.copy(dst + line * pitch_out, src + line * pitch_in, length)

    def _remap(self, dst: int, src: int, count: int) -> None:
        """count elements: each destination component a source component, constant A or B, or left as it is."""
        f = self.fields("SET_REMAP_COMPONENTS", self.state.get("SET_REMAP_COMPONENTS", 0))
        size, n_src, n_dst = f["COMPONENT_SIZE"] + 1, f["NUM_SRC_COMPONENTS"] + 1, f["NUM_DST_COMPONENTS"] + 1
        picks = [f[f"DST_{axis}"] for axis in "XYZW"[:n_dst]]
        if any(p not in SOURCE and p not in CONST and p != NO_WRITE for p in picks):
            raise self.fail(f"SET_REMAP_COMPONENTS picks {picks}: not a source component, constant or NO_WRITE")
        if any(p in SOURCE and p >= n_src for p in picks):
            raise self.fail(f"SET_REMAP_COMPONENTS picks {picks} of {n_src} source components")
        out = (self.vas.read(dst, count * n_dst * size) if NO_WRITE in picks
               else np.zeros(count * n_dst * size, np.uint8)).reshape(count, n_dst, size)
        source = (self.vas.read(src, count * n_src * size).reshape(count, n_src, size)
                  if any(p in SOURCE for p in picks) else None)
        for k, p in enumerate(picks):
            if p in SOURCE:
                out[:, k] = source[:, p]
            elif p in CONST:
                word = self.state.get(f"SET_REMAP_CONST_{CONST[p][-1]}", 0)
                out[:, k] = np.frombuffer(word.to_bytes(4, "little")[:size], np.uint8)
        self.vas.write(dst, out)

    def _semaphore(self, f: dict[str, int]) -> None:
        kind = SEMAPHORE.get(f["SEMAPHORE_TYPE"])
        if kind is None:
            raise self.fail(f"LAUNCH_DMA SEMAPHORE_TYPE {f['SEMAPHORE_TYPE']} is not modelled by the mock GPU")
        if kind == "NONE":
            return
        va = self.field("SET_SEMAPHORE_A", "UPPER") << 32 | self.field("SET_SEMAPHORE_B", "LOWER")
        wide = f.get("SEMAPHORE_PAYLOAD_SIZE", 0) == nc.NVC7B5_LAUNCH_DMA_SEMAPHORE_PAYLOAD_SIZE_TWO_WORD
        payload = self.state.get("SET_SEMAPHORE_PAYLOAD", 0) | (
            self.state.get("SET_SEMAPHORE_PAYLOAD_UPPER", 0) << 32 if wide else 0)
        reduce = None
        if f.get("SEMAPHORE_REDUCTION_ENABLE", 0) == nc.NVC6B5_LAUNCH_DMA_SEMAPHORE_REDUCTION_ENABLE_TRUE:
            reduce = REDUCTION.get(f["SEMAPHORE_REDUCTION"])
            if reduce is None:
                raise self.fail(f"semaphore reduction {f['SEMAPHORE_REDUCTION']} is not modelled by the mock GPU "
                                "(integer reductions only)")
        release(self.gpu, self.vas, va, payload, 8 if wide else 4, kind == "RELEASE_FOUR_WORD_SEMAPHORE", reduce,
                f.get("SEMAPHORE_REDUCTION_SIGN") == nc.NVC6B5_LAUNCH_DMA_SEMAPHORE_REDUCTION_SIGN_SIGNED)

    actions = {"LAUNCH_DMA": _launch_dma}
