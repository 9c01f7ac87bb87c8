"""The write side of GA-2's AXI4 master: an ST's beats as AXI bursts.

At the ST's dispatch (``start``, its ``dst`` and ``len``) the unit knows the external region
and where its first word sits in a bus word (``dst % LANES``). Each DMA write beat (LANES words
at any word address, the lanes below ``len`` masked in) is rotated to the bus's lanes: the part
that completes the current bus word goes out as one W beat, with byte strobes for the words it
holds; the part that spills into the next bus word waits in a register for the next beat, and
after the ST's last beat it goes out on its own. A burst ends at the region's end or at a 4 KiB
boundary; its AW (address and length) is queued with its first W beat, so AW never trails its
data by more than the queue.

Both queues (:class:`~hw.axi_fifo.PairFifo`) keep room for two entries, the most one cycle
pushes: when they would not have it, the unit asks the core to stand still next cycle
(``stall_next``). Every B response is awaited: ``idle`` says that nothing is queued or
unanswered, which the top requires before it reports DONE and before a read goes out.
"""

from __future__ import annotations

from amaranth.hdl import Array, Cat, Module, Mux, Signal
from amaranth.lib import data
from amaranth.lib.wiring import In, Out

from sim import spec
from sim.spec import Params

from . import axi
from .axi import ADDR_BITS
from .axi_fifo import PairFifo
from .ports import words

QUEUE = 4
"""Entries of the W and AW queues."""
OUTSTANDING_BITS = 16
"""Width of the count of bursts sent and not yet answered."""


def _w_layout(lanes: int) -> data.StructLayout:
    return data.StructLayout({"data": lanes * spec.WORD_BITS, "strb": lanes * 4, "last": 1})


def _aw_layout() -> data.StructLayout:
    return data.StructLayout({"addr": ADDR_BITS, "len": 8})


class AxiWriter(axi.MasterSide):
    """ST beats to an AXI4 write channel.

    Parameters:
        params: the machine (LANES).
        burst_bytes: bursts end at multiples of it (as :class:`~hw.axi_read.AxiReader`).

    Members:
        start In(1), dst In(16), length In(16): an ST's dispatch (in a cycle the core advances)
            and its fields.
        wr_en In(1), wr_mask In(LANES), wr_data In(words(LANES)): the DMA's write beat (its
            ``ext`` bus); en In(1): the core advances this cycle (a beat counts only then).
        stall_next Out(1): the core must stand still next cycle (a queue could not take a beat).
        base In(32): byte address of external word 0 (beat-aligned).
        idle Out(1): no beat queued, no burst unanswered, no ST in progress.
        bus_error Out(1): a B response with an error (this cycle).
        m_axi_aw*, m_axi_w*, m_axi_b*: the AW, W and B channels (:data:`hw.axi.AXI4`).
    """

    CHANNELS = ("aw", "w", "b")

    def __init__(self, params: Params, burst_bytes: int = axi.BOUNDARY):
        lanes = params.LANES
        super().__init__(params, burst_bytes, {
            "start": In(1), "dst": In(spec.ADDR_BITS), "length": In(spec.ADDR_BITS),
            "wr_en": In(1), "wr_mask": In(lanes), "wr_data": In(words(lanes)), "en": In(1),
            "stall_next": Out(1), "base": In(ADDR_BITS), "idle": Out(1), "bus_error": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        lanes = self.params.LANES
        lane_bits = (lanes - 1).bit_length()
        beat_shift = (axi.beat_bytes(lanes) - 1).bit_length()
        m.submodules.wq = wq = PairFifo(_w_layout(lanes).size, QUEUE)
        m.submodules.awq = awq = PairFifo(_aw_layout().size, QUEUE)

        off = Signal(lane_bits)                       # dst % LANES: the first word's bus lane
        addr = Signal(ADDR_BITS)                      # byte address of the next bus word pushed
        words_left = Signal(spec.ADDR_BITS + 1)       # bus words still to push
        beats_left = Signal(spec.ADDR_BITS + 1)       # DMA beats still to come
        in_burst = Signal()                           # the next bus word continues a burst
        carry = Signal(lanes * spec.WORD_BITS)        # the words spilled into the next bus word
        carry_strb = Signal(lanes)

        with m.If(self.start):
            last = self.dst + self.length - 1
            m.d.sync += [
                off.eq(self.dst[:lane_bits]),
                addr.eq(self.base + (self.dst[lane_bits:] << beat_shift)),
                words_left.eq(last[lane_bits:] - self.dst[lane_bits:] + 1),
                beats_left.eq((self.length + lanes - 1) >> lane_bits),
                in_burst.eq(0),
                carry_strb.eq(0),
            ]

        # the beat's words rotated to the bus lanes: lane k holds beat word (k - off) mod LANES
        rot = [Signal(spec.WORD_BITS, name=f"rot{k}") for k in range(lanes)]
        rot_mask = Signal(lanes)
        for k in range(lanes):
            pick = Array(self.wr_data[(k - j) % lanes] for j in range(lanes))
            pick_mask = Array(self.wr_mask[(k - j) % lanes] for j in range(lanes))
            m.d.comb += [rot[k].eq(pick[off]), rot_mask[k].eq(pick_mask[off])]
        here = Signal(lanes)                          # lanes >= off: the current bus word's
        for k in range(lanes):
            m.d.comb += here[k].eq(k >= off)
        word = Cat(Mux(here[k], rot[k], carry.word_select(k, spec.WORD_BITS)) for k in range(lanes))
        word_strb = Signal(lanes)
        spill_strb = Signal(lanes)
        m.d.comb += [
            word_strb.eq((rot_mask & here) | (carry_strb & ~here)),
            spill_strb.eq(rot_mask & ~here),
        ]

        beat = self.wr_en & self.en
        flush = beat & (beats_left == 1) & (spill_strb != 0)
        last0 = (words_left == 1) | (axi.beats_to_boundary(addr, lanes, self.burst_bytes) == 1)
        w0, w1 = Signal(_w_layout(lanes)), Signal(_w_layout(lanes))
        aw_here, aw_flush = Signal(_aw_layout()), Signal(_aw_layout())
        starts = beat & ~in_burst                   # this beat's bus word opens a burst
        flush_starts = flush & last0                # the flushed word opens one (after a boundary)
        m.d.comb += [
            w0.data.eq(word), w0.strb.eq(_strobes(word_strb)), w0.last.eq(last0),
            w1.data.eq(Cat(rot)), w1.strb.eq(_strobes(spill_strb)), w1.last.eq(1),
            aw_here.addr.eq(addr),
            aw_here.len.eq(axi.burst_beats(addr, words_left, lanes, self.burst_bytes) - 1),
            aw_flush.addr.eq(addr + axi.beat_bytes(lanes)), aw_flush.len.eq(0),
            wq.push0.eq(beat), wq.data0.eq(w0),
            wq.push1.eq(flush), wq.data1.eq(w1),
            # a burst's AW is queued with its first W beat
            awq.push0.eq(starts | flush_starts),
            awq.data0.eq(Mux(starts, aw_here, aw_flush)),
            awq.push1.eq(starts & flush_starts),
            awq.data1.eq(aw_flush),
        ]
        with m.If(beat):
            m.d.sync += [
                carry.eq(Cat(rot)),
                carry_strb.eq(spill_strb),
                addr.eq(addr + Mux(flush, 2, 1) * axi.beat_bytes(lanes)),
                words_left.eq(words_left - Mux(flush, 2, 1)),
                beats_left.eq(beats_left - 1),
                in_burst.eq(~last0 & ~flush),
            ]
        answered = self._channels(m, wq, awq, lanes, beat_shift)
        m.d.comb += self.idle.eq(answered & (beats_left == 0))
        m.d.comb += self.stall_next.eq((wq.level_next > QUEUE - 2) | (awq.level_next > QUEUE - 2))
        return m

    def _channels(self, m: Module, wq: PairFifo, awq: PairFifo, lanes: int, beat_shift: int) -> Signal:
        """AW and W from the queues, B counted and checked; returns 1 when nothing is queued or
        unanswered."""
        w = data.View(_w_layout(lanes), wq.data)
        aw = data.View(_aw_layout(), awq.data)
        m.d.comb += [
            self.m_axi_awvalid.eq(awq.valid), self.m_axi_awaddr.eq(aw.addr), self.m_axi_awlen.eq(aw.len),
            self.m_axi_awsize.eq(beat_shift), self.m_axi_awburst.eq(axi.INCR), self.m_axi_awid.eq(0),
            awq.ready.eq(self.m_axi_awready),
            self.m_axi_wvalid.eq(wq.valid), self.m_axi_wdata.eq(w.data), self.m_axi_wstrb.eq(w.strb),
            self.m_axi_wlast.eq(w.last), wq.ready.eq(self.m_axi_wready),
            self.m_axi_bready.eq(1),
        ]
        sent = awq.valid & self.m_axi_awready
        answered = self.m_axi_bvalid & self.m_axi_bready
        unanswered = Signal(OUTSTANDING_BITS)
        m.d.sync += unanswered.eq(unanswered + sent - answered)
        m.d.comb += [
            self.bus_error.eq(answered & (self.m_axi_bresp != axi.OKAY)),
        ]
        answered_all = Signal()
        m.d.comb += answered_all.eq((unanswered == 0) & (wq.level == 0) & (awq.level == 0))
        return answered_all


def _strobes(word_mask) -> object:
    """Byte strobes of a bus word from its word mask: four per word."""
    return Cat(bit.replicate(4) for bit in word_mask)
