"""Normalise region names, drop duplicate orders, parse dates."""
import pandas as pd

raw = pd.read_csv("data/sales_raw.csv")
regions = {"n": "North", "s": "South", "e": "East", "w": "West"}
raw["region"] = raw["region"].str.strip().str[0].str.lower().map(regions)
clean = raw.drop_duplicates(subset="order_id").copy()
clean["date"] = pd.to_datetime(clean["date"]).dt.date
clean.to_csv("clean.csv", index=False)
print(f"{len(raw)} rows in, {len(clean)} orders out ({len(raw) - len(clean)} duplicates dropped)")
clean.head()
