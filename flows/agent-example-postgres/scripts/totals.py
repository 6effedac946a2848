"""Units and revenue per region, from data/sales.csv into totals.csv."""

import pandas as pd

sales = pd.read_csv("data/sales.csv")
missing = int(sales["units"].isna().sum())
sales["revenue"] = sales["units"] * sales["unit_price"]
totals = (
    sales.groupby("region", as_index=False)[["units", "revenue"]]
    .sum()
    .sort_values("revenue", ascending=False)
    .round({"revenue": 2})
)
totals.to_csv("totals.csv", index=False)
print(totals.to_string(index=False))
print(f"rows with missing units: {missing}")
