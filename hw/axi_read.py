"""The read side of GA-2's AXI4 master: an LD's external words as the DMA asks for them.

The core's DMA reads its external bus one beat per cycle and expects the data one cycle later
(``EXT_READ_LATENCY``, hw/dma.py). On an AXI bus the data comes when it comes, so the system
top runs the core under a clock enable (hw/axi_top.py): in a cycle where the data of the beat
the DMA reads is not here, the whole core stands still, and this unit says so one cycle ahead
(``stall_next``, registered by the top).

At the LD's dispatch (``start``, with its fields) the unit knows the whole external region
(``len`` words from ``src``, or ``ceil(len / 4)`` packed words with ``fmt = 1``) and requests it
at once, in INCR bursts of beat-aligned words up to each 4 KiB boundary (:mod:`hw.axi`). The
beats land in a buffer of :data:`BUFFER` bus words; the DMA's beats are cut from it at any word
alignment: each DMA beat takes ``min(step, words left)`` words, ``step`` = LANES (fmt = 0) or
LANES / 4 (fmt = 1), the words sitting in lanes 0, 1, ... of ``rd_data``. The last bus word of
the region is dropped when the region's last word has been taken.
"""

from __future__ import annotations

from amaranth.hdl import Array, Cat, Module, Mux, Signal, Value
from amaranth.lib.wiring import In, Out

from sim import spec
from sim.spec import Params

from . import axi
from .axi import ADDR_BITS
from .ports import words

BUFFER = 4
"""Bus words the read buffer holds (RREADY falls when it is full); a power of two."""
BURSTS_OUT = 4
"""Read bursts requested and not yet finished (RLAST) at most."""


def region_words(length, fmt) -> object:
    """External words an LD reads: len, or ceil(len / 4) packed int8 words (fmt = 1)."""
    return Mux(fmt, (length + spec.INT8_PER_WORD - 1) >> 2, length)


def _saturated(count: Value, bits: int) -> Value:
    """``min(count, 2**bits - 1)``, as ``bits`` bits: an OR of the high bits, no comparator."""
    top = (1 << bits) - 1
    return Mux(count[bits:].any(), top, count[:bits])


def _at_most(near: Value, step: Value) -> Value:
    """``min(near, step)``: the words a DMA beat takes. Exact for a count saturated at
    ``bits = lane_bits + 2`` (:func:`_saturated`) since ``step <= LANES``: a saturated count less
    two takes stays at or above LANES (``4 * LANES - 1 - 2 * LANES >= LANES``), as the count
    itself does."""
    return Mux(near < step, near, step)


class AxiReader(axi.MasterSide):
    """LD beats from an AXI4 read channel.

    Parameters:
        params: the machine (LANES, EXT_WORDS).
        burst_bytes: bursts end at multiples of it (a power of two up to 4 KiB: 4096 gives AXI4's
            longest bursts at LANES = 4; a system whose bus narrows GA-2's beats takes fewer).

    Members:
        start In(1), src In(16), length In(16), fmt In(1): an LD's dispatch (in a cycle the core
            advances) and its fields.
        rd_en In(1): the DMA reads a beat (its ``ext.rd_en``); en In(1): the core advances this
            cycle (a read counts only then).
        rd_data Out(words(LANES)): the beat's words, valid in the core's next cycle after the
            read (the DMA registers them then).
        stall_next Out(1): the core must stand still in the next cycle (the next read's data
            will not be here).
        base In(32): byte address of external word 0 (beat-aligned).
        hold In(1): writes are still outstanding: no read request goes out (AXI does not order
            reads after writes). At most :data:`BURSTS_OUT` bursts are requested and unfinished.
        bus_error Out(1): an R beat came back with an error response (this cycle).
        late Out(1): self-check: the core advanced in a cycle whose data was not here (never,
            in a correct unit).
        m_axi_ar*, m_axi_r*: the AR and R channels (:data:`hw.axi.AXI4`).

    Latency: the DMA's first beat waits for the first R beat; after that one beat per cycle
    while R delivers one per cycle.
    """

    CHANNELS = ("ar", "r")

    def __init__(self, params: Params, burst_bytes: int = axi.BOUNDARY):
        super().__init__(params, burst_bytes, {
            "start": In(1), "src": In(spec.ADDR_BITS), "length": In(spec.ADDR_BITS), "fmt": In(1),
            "rd_en": In(1), "en": In(1), "rd_data": Out(words(params.LANES)), "stall_next": Out(1),
            "base": In(ADDR_BITS), "hold": In(1), "bus_error": Out(1), "late": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        lanes = self.params.LANES
        lane_bits = (lanes - 1).bit_length()
        beat_shift = (axi.beat_bytes(lanes) - 1).bit_length()
        word_bits = spec.ADDR_BITS + 1

        buf = Array(Signal(lanes * spec.WORD_BITS, name=f"rbuf{k}", reset_less=True) for k in range(BUFFER))
        head = Signal(range(BUFFER))
        count = Signal(range(BUFFER + 1))
        off = Signal(lane_bits)                 # the next word's lane in the head bus word
        left = Signal(word_bits)                # words the DMA still takes
        step = Signal(range(lanes + 1))
        due = Signal()                          # the DMA takes a beat in the core's next cycle

        # --- the DMA takes a beat: min(step, left) words from (head, off); `near`, `take` and
        # `after` are registers beside `left` (:meth:`_takes`), so that no comparison of the
        # 17-bit count lies between a register and stall_next
        near = Signal(lane_bits + 2)            # min(left, 2**(lane_bits + 2) - 1)
        take = Signal(range(lanes + 1))         # min(left, step): the words of the DMA's next beat
        after = Signal.like(take)               # min(left - take, step): those of the beat after
        pop = due & self.en
        total = Signal(lane_bits + 1)
        m.d.comb += total.eq(off + take)
        shift = pop & total[lane_bits]          # the head bus word is used up
        finish = pop & (near == take)           # the region's last word
        recv = self.m_axi_rvalid & self.m_axi_rready

        head_n, count_n, off_n = Signal.like(head), Signal.like(count), Signal.like(off)
        left_n, step_n = Signal.like(left), Signal.like(step)
        m.d.comb += [
            head_n.eq(Mux(finish, 0, (head + shift)[:len(head)])),
            count_n.eq(Mux(finish, 0, count + recv - shift)),
            off_n.eq(Mux(pop & ~finish, total[:lane_bits], Mux(finish, 0, off))),
            left_n.eq(Mux(pop, left - take, left)),
            step_n.eq(step),
        ]
        region = region_words(self.length, self.fmt)
        with m.If(self.start):
            m.d.comb += [
                off_n.eq(self.src[:lane_bits]),
                left_n.eq(region),
                step_n.eq(Mux(self.fmt, lanes // spec.INT8_PER_WORD, lanes)),
            ]
        take_n = self._takes(m, (near, take, after), pop, step, left_n, step_n, region)
        due_n = Mux(self.en, self.rd_en, due)
        m.d.sync += [head.eq(head_n), count.eq(count_n), off.eq(off_n), left.eq(left_n),
                     step.eq(step_n), due.eq(due_n)]
        with m.If(recv):
            m.d.sync += buf[(head + count)[:len(head)]].eq(self.m_axi_rdata)
            m.d.comb += self.bus_error.eq(self.m_axi_rresp != axi.OKAY)
        m.d.comb += self.m_axi_rready.eq(count < BUFFER)

        # --- the core stands still next cycle when that cycle's beat is not in the buffer
        ready = Signal()
        m.d.comb += [
            ready.eq(off + take <= count * lanes),
            self.stall_next.eq(due_n & (off_n + take_n > count_n * lanes)),
            self.late.eq(pop & ~ready),
        ]

        # --- rd_data: LANES words from lane `off` of the head bus word on
        window = Cat(buf[head], buf[(head + 1)[:len(head)]])
        for i in range(lanes):
            m.d.comb += self.rd_data[i].eq(window.word_select(off + i, spec.WORD_BITS))

        self._requests(m, beat_shift, word_bits)
        return m

    def _takes(self, m: Module, regs: tuple[Signal, Signal, Signal], pop: Value, step: Signal,
               left_n: Signal, step_n: Signal, region: Value) -> Signal:
        """The registers ``near``, ``take`` and ``after`` of :meth:`elaborate`, kept as ``left``
        and ``step`` move (a pop, or an LD's start with its ``region``); returns the next
        cycle's take. A pop's next take is ``after`` itself and the one after it
        ``min(near - take - after, step)``: exact, since a saturated ``near`` less two takes
        stays above LANES (:func:`_at_most`)."""
        near, take, after = regs
        take_n, after_n = Signal.like(take), Signal.like(after)
        m.d.comb += [
            take_n.eq(Mux(pop, after, take)),
            after_n.eq(Mux(pop, _at_most(near - take - after, step), after)),
        ]
        with m.If(self.start):
            first_near = _saturated(region, len(near))
            first_take = _at_most(first_near, step_n)
            m.d.comb += [take_n.eq(first_take), after_n.eq(_at_most(first_near - first_take, step_n))]
        m.d.sync += [near.eq(_saturated(left_n, len(near))), take.eq(take_n), after.eq(after_n)]
        return take_n

    def _requests(self, m: Module, beat_shift: int, word_bits: int) -> None:
        """AR: the LD's region in bursts, from its dispatch on, while no write is outstanding."""
        lanes = self.params.LANES
        lane_bits = (lanes - 1).bit_length()
        next_addr = Signal(ADDR_BITS)           # byte address of the next burst
        bursts_left = Signal(word_bits)         # bus words still to request
        valid = Signal()
        m.d.comb += [
            self.m_axi_arvalid.eq(valid),
            self.m_axi_arsize.eq(beat_shift),
            self.m_axi_arburst.eq(axi.INCR),
            self.m_axi_arid.eq(0),
        ]
        fire = valid & self.m_axi_arready
        finished = self.m_axi_rvalid & self.m_axi_rready & self.m_axi_rlast
        out = Signal(range(BURSTS_OUT + 1))      # bursts requested, not yet finished
        m.d.sync += out.eq(out + fire - finished)
        beats = axi.burst_beats(next_addr, bursts_left, lanes, self.burst_bytes)
        with m.If(self.start):
            last = self.src + region_words(self.length, self.fmt) - 1
            m.d.sync += [
                next_addr.eq(self.base + (self.src[lane_bits:] << beat_shift)),
                bursts_left.eq(last[lane_bits:] - self.src[lane_bits:] + 1),
            ]
        with m.Elif((bursts_left != 0) & ~self.hold & (~valid | fire) & (out + valid < BURSTS_OUT)):
            m.d.sync += [
                valid.eq(1),
                self.m_axi_araddr.eq(next_addr),
                self.m_axi_arlen.eq(beats - 1),
                next_addr.eq(next_addr + (beats << beat_shift)),
                bursts_left.eq(bursts_left - beats),
            ]
        with m.Elif(fire):
            m.d.sync += valid.eq(0)
