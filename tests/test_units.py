"""praxis.units: durations and sizes as a person reads them."""

from __future__ import annotations

from praxis.units import duration, size


def test_durations_in_the_unit_that_reads_best() -> None:
    assert duration(7.62939453125e-06) == "7.6 µs"
    assert duration(0.0123) == "12.3 ms"
    assert duration(7.62) == "7.6 s"
    assert duration(125.4) == "2 min 05 s"
    assert duration(3 * 3600 + 7 * 60 + 3) == "3 h 07 min"
    assert duration(2 * 86400 + 5 * 3600) == "2 d 05 h"
    assert duration(None) == "" and duration(float("nan")) == ""
    assert duration(-2.0) == "-2.0 s"


def test_sizes_in_binary_units() -> None:
    assert [size(n) for n in (0, 1023, 1024, 53064342, 3 << 30)] == [
        "0 B",
        "1023 B",
        "1.0 KiB",
        "50.6 MiB",
        "3.0 GiB",
    ]
    assert size(None) == ""
