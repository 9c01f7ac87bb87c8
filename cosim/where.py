"""A differing memory word in the program's terms: the tensor it holds and the instruction that
wrote it, for :func:`cosim.api.compare`.

For every memory with differences, the first differing word gets a line::

    ext[150] (output 'out' row 0 col 3, from node 12 (concat)): last written by pc 17: ST src=93 ...
    spad[72] (node 9 (matmul) row 0 col 0): last written by pc 18: RQ dst=72 src=104 len=32 ...

The instruction is the last one, in the reference machine's order, whose write regions hold
the word (:mod:`cosim.writers`); the tensor is the compiled program's (``Program.whose``, at
that instruction's pc for the scratchpad, whose buffers come and go), for a job made from a
compiled program (:attr:`cosim.jobs.Job.compiled`); a hand-written or random program gets the
instruction only. A last line names the earliest instruction among the last writers of all the
differing words, when no line above names it: the first write whose result is still wrong at
the stop, where a search for the cause starts.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from sim.spec import Params

from .jobs import Expected, Job
from .writers import NOT_WRITTEN, Writers

ORIGIN = {"ext": "the host's image's value", "spad": "the value it held when the program started"}
"""Where a word no instruction wrote got its reference value."""


def symbol(job: Job, memory: str, address: int, pc: int) -> str | None:
    """The compiled program's name for the word at that pc, or None (no compiled program, or
    an external word outside every region)."""
    if job.compiled is None:
        return None
    return job.compiled.whose(memory, address, pc)


def word_line(job: Job, writers: Writers, memory: str, address: int) -> str:
    """``ext[150] (output 'out' row 0 col 3, ...): last written by pc 17: ST ...``."""
    pc = writers.of(memory, address)
    named = symbol(job, memory, address, writers.stop if pc == NOT_WRITTEN else pc)
    head = f"{memory}[{address}]" + (f" ({named})" if named else "")
    if pc == NOT_WRITTEN:
        return (f"{head}: no instruction before the stop at pc {writers.stop} writes it (the reference keeps "
                f"{ORIGIN[memory]})")
    return f"{head}: last written by {writers.instruction(pc)}"


def lines(job: Job, want: Expected, params: Params, differing: Mapping[str, np.ndarray]) -> dict[str, str]:
    """One line per memory with differences (its first differing address), and ``"earliest"``:
    the earliest last writer of any differing word, when another line does not name it.

    Args:
        job: the job (its program; its compiled program, if any, for the tensors).
        want: the reference machine's run (its stop pc).
        params: the machine.
        differing: memory name -> the differing addresses, ascending.
    """
    writers = Writers.replay(job.program, want.error_pc, params)
    firsts = {memory: int(bad[0]) for memory, bad in differing.items() if len(bad)}
    out = {memory: word_line(job, writers, memory, address) for memory, address in firsts.items()}
    named = {writers.of(memory, address) for memory, address in firsts.items()}
    earliest = None
    for memory, bad in differing.items():
        pcs = getattr(writers, memory)[bad]
        written = pcs != NOT_WRITTEN
        if written.any():
            k = int(np.argmin(np.where(written, pcs, np.iinfo(np.int32).max)))
            if earliest is None or pcs[k] < earliest[0]:
                earliest = (int(pcs[k]), memory, int(bad[k]))
    if earliest is not None and earliest[0] not in named:
        _, memory, address = earliest
        out["earliest"] = f"earliest differing write: {word_line(job, writers, memory, address)}"
    return out
