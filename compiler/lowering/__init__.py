"""How each operation lowers to GA-2 instructions: the back end's half of an operation, kept
apart from what the operation is (:mod:`compiler.ops`), as xDSL keeps op definitions free of
their lowerings. Each operation's lowering is registered against it in :mod:`.table`; emission
(:mod:`compiler.emit`) looks it up there.

Contract: a lowering takes the emitter (:class:`~compiler.lowering.emitter.Emitter`: it
allocates, gives addresses and collects instructions and requantizer pairs), the node and its
operands' scratchpad addresses, and writes the node's instructions. The order below is the
seed's (chapter 11) and fixes every address:

* input, weight (:mod:`.memory`): run by the emitter just before the first step that reads
  them: the buffer, then LD; an int4 weight is loaded packed into a temporary and expanded by
  UNPACK;
* slice, concat, fused relu (:mod:`.view`, :mod:`.relu`): the buffer, no instruction (an
  unfused relu: one identity RQ with relu = 1, in place);
* matmul (:mod:`.matmul`): the output buffer, then an int32 accumulator (a bias loaded into
  each of its rows first, :mod:`compiler.bias`); one MM per T x T output tile (tile rows
  outer, tile columns inner; edge tiles smaller), cut into pieces of at most K_MAX along K
  that add into the tile (MM acc = 1), then one RQ into the output (with the relu flag when
  a relu was fused), then the accumulator is released. When its operands do not fit the
  scratchpad whole, its step (:mod:`compiler.streaming`) blocks it;
* softmax (:mod:`.softmax`): the output buffer, a Q16 temporary, one SM per row, one RQ to
  the 1/127 scale;
* add (:mod:`.add`): for each operand whose scale differs from the sum's, a temporary and an
  RQ that rescales it (int8 to int8); then the output buffer and one VADD (with the relu flag
  when a relu was fused); the temporaries go;
* table (:mod:`.activation`): its 256 entries loaded into a temporary, one LUT;
* argmax (:mod:`.argmax`): the output buffer, one AMAX per row;
* output (:mod:`.memory`): one ST to the output's external region.

The fields of each instruction come from a small function of their own (``mm_fields``,
``sm_fields``, ...), and the requantizer factors from :mod:`compiler.requant`.
"""
