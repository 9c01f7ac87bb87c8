"""A protocol checker for simulation: the AXI rules GA-2's buses must keep, as sticky flags.

:class:`AxiChecker` watches an AXI4 port (GA-2's master and the memory that answers it) and
:class:`AxiLiteChecker` an AXI4-Lite port (a host and GA-2's register slave). Neither drives
anything: each raises ``fault`` in the cycle after the first rule broken and holds it, with
``code`` the broken rule's number (its index in :data:`RULES` or :data:`LITE_RULES`, plus
one; the lowest when several break in one cycle), until reset. The co-simulation reads them
after every program (cosim/axi_tb.py): a run with a fault fails, naming the rule.

The rules (AXI, ARM IHI 0022, sections A3.2 and A3.4): a VALID, once high, stays high until
READY and its payload holds still meanwhile (every channel, both sides); a burst is INCR, of
full beats (AxSIZE), beat-aligned, within a 4 KiB page and within the external window
``[base, base + 4 * EXT_WORDS)``; each W burst has as many beats as its AW says and WLAST on
the last; each W beat writes some byte; R comes only for a requested burst, with RLAST on its
last beat; B only for a write whose address and data were both sent. For AXI4-Lite: B and R
come only for a write or read taken.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import In, Out

from sim import regmap
from sim.spec import Params

from . import axi
from .axi_read import ADDR_BITS
from .component import Checked

HANDSHAKE_RULES = (
    *(f"{c.upper()}VALID fell before {c.upper()}READY" for c in axi.CHANNELS),
    *(f"{c.upper()} payload changed while {c.upper()}VALID waited" for c in axi.CHANNELS),
)
"""The rules every channel of either bus keeps."""
RULES = (
    *HANDSHAKE_RULES,
    "AW burst is not INCR of full, aligned beats", "AR burst is not INCR of full, aligned beats",
    "AW burst crosses a 4 KiB boundary", "AR burst crosses a 4 KiB boundary",
    "AW burst leaves the external window", "AR burst leaves the external window",
    "W burst length differs from its AWLEN (WLAST misplaced)",
    "W beat with no byte strobe",
    "R beat with no read burst outstanding", "RLAST misplaced (not on the ARLEN-th beat)",
    "B response with no write outstanding",
    "checker: more bursts outstanding than it can follow",
)
"""What each fault code of :class:`AxiChecker` means (code k is RULES[k - 1])."""
LITE_RULES = (
    *HANDSHAKE_RULES,
    "B response with no write taken", "R response with no read taken",
)
"""What each fault code of :class:`AxiLiteChecker` means."""
QUEUE = 8
"""Bursts the checker follows at once (GA-2's master keeps fewer outstanding)."""


class _Rules:
    """Collects (rule index, condition) pairs and builds the sticky fault and its code."""

    def __init__(self, m: Module, rules: tuple[str, ...]):
        self.m, self.rules, self.broken = m, rules, {}

    def add(self, text: str, condition) -> None:
        index = self.rules.index(text)
        self.broken[index] = self.broken[index] | condition if index in self.broken else condition

    def stability(self, port, prefix: str, channel: str, payload: tuple[str, ...]) -> None:
        """VALID held until READY, the payload held meanwhile."""
        m = self.m
        valid, ready = getattr(port, f"{prefix}_{channel}valid"), getattr(port, f"{prefix}_{channel}ready")
        data = Cat(getattr(port, f"{prefix}_{n}") for n in payload)
        waited = Signal(name=f"{channel}_waited")
        held = Signal.like(data, name=f"{channel}_held")
        m.d.sync += [waited.eq(valid & ~ready), held.eq(data)]
        self.add(f"{channel.upper()}VALID fell before {channel.upper()}READY", waited & ~valid)
        self.add(f"{channel.upper()} payload changed while {channel.upper()}VALID waited",
                 waited & valid & (data != held))

    def build(self, fault, code) -> None:
        m = self.m
        with m.If(~fault):
            for index in sorted(self.broken, reverse=True):      # the lowest code wins
                with m.If(self.broken[index]):
                    m.d.sync += [fault.eq(1), code.eq(index + 1)]


class AxiChecker(Checked):
    """The AXI4 rules on GA-2's master port (see the module docstring).

    Parameters:
        params: the machine (LANES: the beat; EXT_WORDS: the window).

    Members: every signal of :data:`hw.axi.AXI4` as In (``m_axi_*``), base In(32) (EXT_BASE),
        fault Out(1), code Out(8).
    """

    def __init__(self, params: Params):
        self.params = params
        bus = axi.members(axi.AXI4, "m_axi", master=True, addr_bits=ADDR_BITS,
                          data_bits=params.LANES * 32)
        super().__init__({**{k: In(v.shape) for k, v in bus.items()}, "base": In(ADDR_BITS),
                          "fault": Out(1), "code": Out(8)})

    def elaborate(self, platform):
        m = Module()
        rules = _Rules(m, RULES)
        for channel in axi.CHANNELS:
            rules.stability(self, "m_axi", channel, axi.payload(axi.AXI4, channel))
        lanes = self.params.LANES
        beat = axi.beat_bytes(lanes)
        shift = (beat - 1).bit_length()
        span = 4 * self.params.EXT_WORDS
        for c in ("aw", "ar"):
            fire = getattr(self, f"m_axi_{c}valid") & getattr(self, f"m_axi_{c}ready")
            addr, length = getattr(self, f"m_axi_{c}addr"), getattr(self, f"m_axi_{c}len")
            size, burst = getattr(self, f"m_axi_{c}size"), getattr(self, f"m_axi_{c}burst")
            end = addr + (length + 1) * beat          # one past the burst's last byte
            rules.add(f"{c.upper()} burst is not INCR of full, aligned beats",
                      fire & ((size != shift) | (burst != axi.INCR) | (addr[:shift] != 0)))
            rules.add(f"{c.upper()} burst crosses a 4 KiB boundary",
                      fire & (addr[:12] + (length + 1) * beat > axi.BOUNDARY))
            rules.add(f"{c.upper()} burst leaves the external window",
                      fire & ((addr < self.base) | (end > self.base + span)))
        self._lengths(m, rules)
        rules.add("W beat with no byte strobe",
                  self.m_axi_wvalid & self.m_axi_wready & (self.m_axi_wstrb == 0))
        rules.build(self.fault, self.code)
        return m

    def _lengths(self, m: Module, rules: _Rules) -> None:
        """W bursts against AW lengths, R beats against AR lengths, B against finished writes."""
        aw_fire = self.m_axi_awvalid & self.m_axi_awready
        w_fire = self.m_axi_wvalid & self.m_axi_wready
        ar_fire = self.m_axi_arvalid & self.m_axi_arready
        r_fire = self.m_axi_rvalid & self.m_axi_rready
        b_fire = self.m_axi_bvalid & self.m_axi_bready
        m.submodules.aw_lens = aw_lens = SyncFIFO(width=9, depth=QUEUE)
        m.submodules.w_lens = w_lens = SyncFIFO(width=9, depth=QUEUE)
        m.submodules.ar_lens = ar_lens = SyncFIFO(width=9, depth=QUEUE)
        w_beats = Signal(9)
        r_beats = Signal(9)
        m.d.comb += [
            aw_lens.w_en.eq(aw_fire), aw_lens.w_data.eq(self.m_axi_awlen + 1),
            w_lens.w_en.eq(w_fire & self.m_axi_wlast), w_lens.w_data.eq(w_beats + 1),
            ar_lens.w_en.eq(ar_fire), ar_lens.w_data.eq(self.m_axi_arlen + 1),
        ]
        with m.If(w_fire):
            m.d.sync += w_beats.eq(0)
            with m.If(~self.m_axi_wlast):
                m.d.sync += w_beats.eq(w_beats + 1)
        pair = aw_lens.r_rdy & w_lens.r_rdy
        m.d.comb += [aw_lens.r_en.eq(pair), w_lens.r_en.eq(pair)]
        rules.add("W burst length differs from its AWLEN (WLAST misplaced)",
                  pair & (aw_lens.r_data != w_lens.r_data))
        rules.add("checker: more bursts outstanding than it can follow",
                  (aw_fire & ~aw_lens.w_rdy) | (w_fire & self.m_axi_wlast & ~w_lens.w_rdy)
                  | (ar_fire & ~ar_lens.w_rdy))

        rules.add("R beat with no read burst outstanding", r_fire & ~ar_lens.r_rdy)
        last_beat = r_beats + 1 == ar_lens.r_data
        rules.add("RLAST misplaced (not on the ARLEN-th beat)",
                  r_fire & ar_lens.r_rdy & (self.m_axi_rlast != last_beat))
        m.d.comb += ar_lens.r_en.eq(r_fire & self.m_axi_rlast)
        with m.If(r_fire):
            m.d.sync += r_beats.eq(0)
            with m.If(~self.m_axi_rlast):
                m.d.sync += r_beats.eq(r_beats + 1)

        aws, wbursts, bs = Signal(16), Signal(16), Signal(16)
        m.d.sync += [aws.eq(aws + aw_fire), wbursts.eq(wbursts + (w_fire & self.m_axi_wlast)),
                     bs.eq(bs + b_fire)]
        rules.add("B response with no write outstanding", b_fire & ((bs == aws) | (bs == wbursts)))


class AxiLiteChecker(Checked):
    """The AXI4-Lite rules on GA-2's register slave port.

    Parameters:
        params: the machine (the slave's address width).

    Members: every signal of :data:`hw.axi.AXI4_LITE` as In (``s_axil_*``), fault Out(1), code Out(8).
    """

    def __init__(self, params: Params):
        self.params = params
        bus = axi.members(axi.AXI4_LITE, "s_axil", master=True, addr_bits=regmap.address_bits(params))
        super().__init__({**{k: In(v.shape) for k, v in bus.items()}, "fault": Out(1), "code": Out(8)})

    def elaborate(self, platform):
        m = Module()
        rules = _Rules(m, LITE_RULES)
        for channel in axi.CHANNELS:
            rules.stability(self, "s_axil", channel, axi.payload(axi.AXI4_LITE, channel))
        taken_w = self.s_axil_awvalid & self.s_axil_awready & self.s_axil_wvalid & self.s_axil_wready
        taken_r = self.s_axil_arvalid & self.s_axil_arready
        pending_b, pending_r = Signal(), Signal()
        b_fire = self.s_axil_bvalid & self.s_axil_bready
        r_fire = self.s_axil_rvalid & self.s_axil_rready
        with m.If(taken_w):
            m.d.sync += pending_b.eq(1)
        with m.Elif(b_fire):
            m.d.sync += pending_b.eq(0)
        with m.If(taken_r):
            m.d.sync += pending_r.eq(1)
        with m.Elif(r_fire):
            m.d.sync += pending_r.eq(0)
        rules.add("B response with no write taken", self.s_axil_bvalid & ~pending_b)
        rules.add("R response with no read taken", self.s_axil_rvalid & ~pending_r)
        rules.build(self.fault, self.code)
        return m
