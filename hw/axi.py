"""AXI4 and AXI4-Lite as GA-2's system top uses them: flat port members and burst arithmetic.

The members are flat and named ``<prefix>_<signal>`` (``m_axi_awaddr``, ``s_axil_rdata``), the
names of the AXI specification (ARM IHI 0022) in lower case, so that the exported Verilog has
the ports a system integrator and cocotbext-axi expect (``AxiBus.from_prefix(dut, "m_axi")``).
Channels, as the specification defines them: AW (write address), W (write data), B (write
response), AR (read address), R (read data); a transfer happens in a cycle where VALID and READY
are both high.

GA-2's master issues INCR bursts of full-width beats (``LANES`` words, ``4 * LANES`` bytes),
aligned to the beat, that never cross a 4 KiB boundary (the specification's rule, A3.4.1): at
LANES >= 4 that also keeps every burst within 256 beats.
"""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Value
from amaranth.lib.wiring import In, Out

from sim import spec
from sim.spec import Params

from .component import Checked, check_params

BOUNDARY = 4096
"""No burst crosses a 4 KiB boundary (AXI A3.4.1)."""
MAX_BEATS = 256
"""The longest INCR burst of AXI4 (AxLEN is 8 bits)."""
INCR = 1
"""AxBURST for an incrementing burst."""
OKAY = 0
"""xRESP of a successful transfer; SLVERR is 2, DECERR 3."""
SLVERR = 2
ID_BITS = 1
"""GA-2 uses one ID (0): every read returns in order, every write is answered in order."""
ADDR_BITS = 32
"""Byte address width of GA-2's master bus."""

# (signal, width, driven by the master): widths are ints or "addr", "data", "strb", "id"
AXI4 = (
    ("awid", "id", True), ("awaddr", "addr", True), ("awlen", 8, True), ("awsize", 3, True),
    ("awburst", 2, True), ("awlock", 1, True), ("awcache", 4, True), ("awprot", 3, True),
    ("awvalid", 1, True), ("awready", 1, False),
    ("wdata", "data", True), ("wstrb", "strb", True), ("wlast", 1, True), ("wvalid", 1, True),
    ("wready", 1, False),
    ("bid", "id", False), ("bresp", 2, False), ("bvalid", 1, False), ("bready", 1, True),
    ("arid", "id", True), ("araddr", "addr", True), ("arlen", 8, True), ("arsize", 3, True),
    ("arburst", 2, True), ("arlock", 1, True), ("arcache", 4, True), ("arprot", 3, True),
    ("arvalid", 1, True), ("arready", 1, False),
    ("rid", "id", False), ("rdata", "data", False), ("rresp", 2, False), ("rlast", 1, False),
    ("rvalid", 1, False), ("rready", 1, True),
)
"""The AXI4 signals of GA-2's master (the optional QOS, REGION and USER signals left out)."""

AXI4_LITE = (
    ("awaddr", "addr", True), ("awprot", 3, True), ("awvalid", 1, True), ("awready", 1, False),
    ("wdata", 32, True), ("wstrb", 4, True), ("wvalid", 1, True), ("wready", 1, False),
    ("bresp", 2, False), ("bvalid", 1, False), ("bready", 1, True),
    ("araddr", "addr", True), ("arprot", 3, True), ("arvalid", 1, True), ("arready", 1, False),
    ("rdata", 32, False), ("rresp", 2, False), ("rvalid", 1, False), ("rready", 1, True),
)
"""The AXI4-Lite signals (32-bit data)."""

CHANNELS = ("aw", "w", "b", "ar", "r")
"""The five channels, named as their signals begin."""


def beat_bytes(lanes: int) -> int:
    """Bytes per beat of GA-2's master: LANES 32-bit words."""
    return lanes * spec.WORD_BITS // 8


def _width(kind, *, addr_bits: int, data_bits: int) -> int:
    if isinstance(kind, int):
        return kind
    return {"addr": addr_bits, "data": data_bits, "strb": data_bits // 8, "id": ID_BITS}[kind]


def channel_of(name: str) -> str:
    """The channel of a signal: aw, w, b, ar or r (its name's first letters)."""
    return name[:2] if name[:2] in ("aw", "ar") else name[0]


def members(table, prefix: str, *, master: bool, addr_bits: int, data_bits: int = 32,
            channels: tuple[str, ...] | None = None) -> dict:
    """Flat ``wiring`` members for one side of a bus: ``<prefix>_<signal>``, Out for what this
    side drives (the master's signals when ``master``, else the slave's); only those of
    ``channels`` when given."""
    out = {}
    for name, kind, by_master in table:
        if channels is not None and channel_of(name) not in channels:
            continue
        flow = Out if by_master == master else In
        out[f"{prefix}_{name}"] = flow(_width(kind, addr_bits=addr_bits, data_bits=data_bits))
    return out


def payload(table, channel: str) -> tuple[str, ...]:
    """The signals of a channel in a table, but its VALID and READY."""
    return tuple(n for n, _, _ in table
                 if channel_of(n) == channel and n not in (f"{channel}valid", f"{channel}ready"))


def connect(m: Module, table, prefix: str, master, slave, *, slave_prefix: str | None = None,
            channels: tuple[str, ...] | None = None) -> None:
    """Wire two components' flat members of a bus (those of ``channels`` when given): the
    master's outputs to the slave's inputs and back."""
    slave_prefix = prefix if slave_prefix is None else slave_prefix
    for name, _, by_master in table:
        if channels is not None and channel_of(name) not in channels:
            continue
        a, b = getattr(master, f"{prefix}_{name}"), getattr(slave, f"{slave_prefix}_{name}")
        m.d.comb += (b.eq(a) if by_master else a.eq(b))


def check_burst_bytes(burst_bytes: int, lanes: int) -> None:
    """Refuse a burst boundary that is not a power of two from one beat to 4 KiB.

    Raises:
        ValueError: naming the value and the range.
    """
    if burst_bytes & (burst_bytes - 1) or not beat_bytes(lanes) <= burst_bytes <= BOUNDARY:
        raise ValueError(f"burst_bytes={burst_bytes}: must be a power of two from one beat "
                         f"({beat_bytes(lanes)} bytes at LANES = {lanes}) to {BOUNDARY}")


def beats_to_boundary(addr: Value, lanes: int, burst_bytes: int = BOUNDARY) -> Value:
    """Beats from a beat-aligned byte address to the next multiple of ``burst_bytes`` (a power of
    two dividing 4 KiB: bursts that end there never cross a 4 KiB boundary)."""
    shift = (beat_bytes(lanes) - 1).bit_length()
    offset = addr[:(burst_bytes - 1).bit_length()]
    return Mux(offset == 0, burst_bytes >> shift, (burst_bytes - offset) >> shift)


def burst_beats(addr: Value, left: Value, lanes: int, burst_bytes: int = BOUNDARY) -> Value:
    """The next burst's beats: what is left, up to the next ``burst_bytes`` boundary."""
    assert BOUNDARY // beat_bytes(lanes) <= MAX_BEATS, "a burst to the boundary fits AxLEN"
    room = beats_to_boundary(addr, lanes, burst_bytes)
    return Mux(left < room, left, room)


class MasterSide(Checked):
    """What the master's two sides (:class:`~hw.axi_read.AxiReader`, :class:`~hw.axi_write.AxiWriter`)
    share: the machine, where bursts end, and their channels of the :data:`AXI4` master bus
    (``m_axi_*``, :data:`ADDR_BITS` address bits, LANES * 32 data bits), those of
    :attr:`CHANNELS`, after the side's own members.

    Parameters:
        params: the machine (LANES).
        burst_bytes: bursts end at multiples of it (a power of two from one beat to 4 KiB).
        ports: the side's own members.

    Raises:
        TypeError: params is not a :class:`sim.spec.Params`.
        ValueError: burst_bytes is not a power of two from one beat to 4 KiB.
    """

    CHANNELS: tuple[str, ...] = ()
    """The channels of the master bus this side drives and watches."""

    @classmethod
    def check(cls, params: Params, burst_bytes: int = BOUNDARY) -> None:
        check_params(cls.__name__, params)
        check_burst_bytes(burst_bytes, params.LANES)

    def __init__(self, params: Params, burst_bytes: int, ports: dict):
        self.params = params
        self.burst_bytes = burst_bytes
        bus = members(AXI4, "m_axi", master=True, addr_bits=ADDR_BITS,
                      data_bits=params.LANES * spec.WORD_BITS, channels=self.CHANNELS)
        super().__init__({**ports, **bus})
