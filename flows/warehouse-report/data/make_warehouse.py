"""Make data/warehouse.duckdb, the small warehouse this example ships: 240 orders over twelve
weeks of 2024 in four regions, the same every time (a seeded generator).

    python data/make_warehouse.py      (from the flow folder; replaces the file)

The flow reads it as `database: data/warehouse.duckdb`, read-only, by descriptor. To run the
example against PostgreSQL instead, load the same rows there (docs/how-to/query-and-publish.md).
"""

from __future__ import annotations

import datetime
import random
from pathlib import Path

import duckdb

HERE = Path(__file__).resolve().parent
REGIONS = ("North", "South", "East", "West")
PRODUCTS = {"notebook": 4.5, "lamp": 39.0, "pen": 1.2, "desk": 189.0}


def rows() -> list[tuple[object, ...]]:
    rng = random.Random(45)
    start = datetime.date(2024, 1, 1)
    out: list[tuple[object, ...]] = []
    for order_id in range(1, 241):
        product = rng.choice(sorted(PRODUCTS))
        units = rng.randint(1, 6)
        amount = round(PRODUCTS[product] * units * rng.uniform(0.9, 1.1), 2)
        if order_id % 47 == 0:
            amount = -amount  # a refund booked as an order: the clean phase drops it
        day = start + datetime.timedelta(days=rng.randrange(84))
        out.append((order_id, day, rng.choice(REGIONS), product, units, amount))
    return out


def main() -> None:
    path = HERE / "warehouse.duckdb"
    path.unlink(missing_ok=True)
    with duckdb.connect() as conn:
        # small blocks keep the shipped file small (the default block is 256 KiB)
        conn.execute(f"ATTACH '{path}' AS warehouse (BLOCK_SIZE 16384)")
        conn.execute("USE warehouse")
        conn.execute(
            "CREATE TABLE orders (order_id INTEGER PRIMARY KEY, day DATE NOT NULL, "
            "region VARCHAR NOT NULL, product VARCHAR NOT NULL, units INTEGER NOT NULL, "
            "amount DECIMAL(10, 2) NOT NULL)"
        )
        conn.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?)", rows())
        conn.execute("CHECKPOINT warehouse")


if __name__ == "__main__":
    main()
