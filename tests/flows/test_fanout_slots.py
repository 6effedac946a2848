"""A fan-out's run slots (partition.py): ``parallel`` at once, taken in the partitions'
order whichever sandbox opened first; one that never opened lets the next ones go on."""

from __future__ import annotations

import threading

from praxis.flows.engine.partition import Slots


def _taker(slots: Slots, turn: int, stop: threading.Event, got: list[int]) -> threading.Thread:
    def take() -> None:
        if slots.take(turn, stop):
            got.append(turn)

    thread = threading.Thread(target=take, daemon=True)  # a broken order fails, never hangs
    thread.start()
    return thread


def test_slots_are_taken_in_turn() -> None:
    slots, stop, got = Slots(1), threading.Event(), []
    second = _taker(slots, 1, stop, got)  # its sandbox opened first: it still waits
    second.join(0.5)
    assert second.is_alive() and got == []
    assert slots.take(0, stop)
    got.append(0)
    second.join(0.5)
    assert second.is_alive()  # the one slot is held by turn 0
    slots.release()
    second.join(5)
    assert got == [0, 1]


def test_a_turn_given_up_lets_the_next_go_on() -> None:
    slots, stop, got = Slots(2), threading.Event(), []
    third = _taker(slots, 2, stop, got)
    assert slots.take(0, stop)
    third.join(0.5)
    assert third.is_alive()  # turn 1 has not come
    slots.give_up(1)  # its sandbox did not open
    third.join(5)
    assert got == [2]


def test_a_stop_ends_the_wait() -> None:
    slots, stop, got = Slots(1), threading.Event(), []
    assert slots.take(0, stop)
    waiting = _taker(slots, 1, stop, got)
    stop.set()
    waiting.join(5)
    assert not waiting.is_alive() and got == []
