"""Normalise station names, parse times, drop readings without a temperature."""

import pandas as pd

raw = pd.read_csv("data/readings.csv")
raw["station"] = raw["station"].str.strip().str.lower()
raw["time"] = pd.to_datetime(raw["time"])
tidy = raw.dropna(subset=["temp_c"])
tidy.to_csv("tidy.csv", index=False)
print(f"{len(raw)} readings in, {len(tidy)} kept ({len(raw) - len(tidy)} without a temperature)")
tidy.head()
