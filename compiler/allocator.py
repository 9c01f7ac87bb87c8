"""The scratchpad allocator: first fit, with coalescing on release.

Contract: the free space is a list of (start, words) pieces, sorted by start, never empty
pieces, never two pieces that touch (they are merged). :meth:`Allocator.alloc` takes the
first piece, lowest address first, that is large enough and cuts the buffer from its start
(seed chapter 11: the classic malloc algorithm on the scratchpad). :meth:`Allocator.release`
gives a range back and merges it with its neighbours. ``high`` is one more than the highest
word ever handed out: the program's scratchpad high-water mark.

Each operation costs time linear in the number of free pieces, which stays small.

A full scratchpad raises :class:`ScratchpadFull` (a :class:`CompileError`). Emission tries a
step's allocations and, when they fail, puts the allocator back as it was
(:meth:`Allocator.save`, :meth:`Allocator.restore`) and tries a blocking that needs less
(:mod:`compiler.streaming`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .errors import CompileError, plural


def fits(piece: int, words: int) -> bool:
    """Whether a free piece of ``piece`` words can hold a buffer of ``words`` words."""
    return piece >= words


def adjacent(piece: tuple[int, int], start: int) -> bool:
    """Whether the free piece (start, words) ends exactly where a range at ``start`` begins."""
    return piece[0] + piece[1] == start


class ScratchpadFull(CompileError):
    """No free piece of the scratchpad is large enough for a buffer."""


@dataclass(frozen=True)
class AllocState:
    """What :meth:`Allocator.save` keeps: the free pieces, the high-water mark, the events so far."""

    free_list: tuple[tuple[int, int], ...]
    high: int
    events: int


@dataclass(frozen=True)
class AllocEvent:
    """One allocator operation, for a trace.

    Attributes:
        kind: "alloc" or "free".
        addr: first word of the range.
        words: its size.
        what: what the range holds (given by the caller), e.g. "output of node 4".
        pc: instructions emitted before the event (the index of the next one), when the
            allocator was given a clock; None otherwise.
    """

    kind: str
    addr: int
    words: int
    what: str = ""
    pc: int | None = None


class Allocator:
    """First-fit allocator over ``size`` words.

    Args:
        size: words of scratchpad to manage.
        events: if a list is given, every alloc and release appends an :class:`AllocEvent`.
        clock: if given, called for each event's ``pc`` (emission passes the program length).
    """

    def __init__(self, size: int, events: list[AllocEvent] | None = None,
                 clock: Callable[[], int] | None = None):
        self.size = size
        self.free_list: list[tuple[int, int]] = [(0, size)]
        self.high = 0
        self.events = events
        self.clock = clock

    def free_words(self) -> int:
        return sum(words for _, words in self.free_list)

    def alloc(self, words: int, what: str = "") -> int:
        """Address of a new range of ``words`` words.

        Raises:
            ScratchpadFull: no free piece is large enough; the message gives the free words
                and the number of pieces they are in.
        """
        for index, (start, piece) in enumerate(self.free_list):
            if fits(piece, words):
                rest = [(start + words, piece - words)] if piece > words else []
                self.free_list[index:index + 1] = rest
                self.high = max(self.high, start + words)
                self._log("alloc", start, words, what)
                return start
        subject = f" for {what}" if what else ""
        raise ScratchpadFull(f"scratchpad is full: cannot place a buffer of {plural(words, 'word')} (free: "
                           f"{plural(self.free_words(), 'word')} in {plural(len(self.free_list), 'piece')})"
                           f"{subject}",
                           "use smaller tensors or fewer alive at once (dead buffers are already "
                           "reused); a larger model must be split into parts that fit")

    def release(self, start: int, words: int, what: str = "") -> None:
        """Give the range back; merge it with the free pieces it touches."""
        pieces = sorted([*self.free_list, (start, words)])
        merged: list[tuple[int, int]] = []
        for begin, size in pieces:
            if merged and adjacent(merged[-1], begin):
                merged[-1] = (merged[-1][0], merged[-1][1] + size)
            else:
                merged.append((begin, size))
        self.free_list = merged
        self._log("free", start, words, what)

    def largest_free(self) -> int:
        """Words of the largest free piece (0 when the scratchpad is full)."""
        return max((words for _, words in self.free_list), default=0)

    def save(self) -> AllocState:
        """The allocator's state, for :meth:`restore`."""
        logged = len(self.events) if self.events is not None else 0
        return AllocState(tuple(self.free_list), self.high, logged)

    def restore(self, state: AllocState) -> None:
        """Put back the state :meth:`save` returned: the free pieces, the high-water mark, and
        the event log cut back to its length then (the allocations since did not happen)."""
        self.free_list = list(state.free_list)
        self.high = state.high
        if self.events is not None:
            del self.events[state.events:]

    def _log(self, kind: str, addr: int, words: int, what: str) -> None:
        if self.events is not None:
            pc = None if self.clock is None else self.clock()
            self.events.append(AllocEvent(kind, addr, words, what, pc))
