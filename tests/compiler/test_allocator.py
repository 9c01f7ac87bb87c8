"""compiler/allocator.py: first fit, coalescing, the full message and the event log."""

import pytest

from compiler import CompileError
from compiler.allocator import Allocator, AllocEvent


def test_first_fit_takes_the_lowest_piece_that_is_large_enough():
    a = Allocator(100)
    assert [a.alloc(10), a.alloc(20), a.alloc(10)] == [0, 10, 30]
    a.release(10, 20)
    assert a.alloc(25) == 40                    # the 20-word hole is too small
    assert a.alloc(15) == 10                    # the hole takes the next that fits
    assert a.free_list == [(25, 5), (65, 35)]
    assert a.high == 65


def test_release_merges_with_both_neighbours():
    a = Allocator(30)
    for _ in range(3):
        a.alloc(10)
    a.release(0, 10)
    a.release(20, 10)
    assert a.free_list == [(0, 10), (20, 10)]
    a.release(10, 10)
    assert a.free_list == [(0, 30)]


def test_an_exact_fit_leaves_no_empty_piece():
    a = Allocator(16)
    a.alloc(16)
    assert a.free_list == []
    with pytest.raises(CompileError) as info:
        a.alloc(1)
    assert "cannot place a buffer of 1 word (free: 0 words in 0 pieces)" in info.value.problem


def test_the_full_message_counts_free_words_and_pieces_and_names_the_user():
    a = Allocator(20)
    a.alloc(4)
    a.alloc(4)
    a.alloc(4)
    a.release(4, 4)
    with pytest.raises(CompileError) as info:
        a.alloc(10, "the tensor of node 3 (matmul)")
    assert info.value.problem == ("scratchpad is full: cannot place a buffer of 10 words "
                                  "(free: 12 words in 2 pieces) for the tensor of node 3 (matmul)")
    assert info.value.fix


def test_events_are_logged_in_order_when_asked():
    log: list[AllocEvent] = []
    a = Allocator(8, log)
    a.alloc(3, "t")
    a.release(0, 3, "t")
    assert log == [AllocEvent("alloc", 0, 3, "t"), AllocEvent("free", 0, 3, "t")]
