"""Flag orders a person should look at: negative amounts, or 5x the product's median price.

The reviewer sets `action` to keep or drop for each flagged order at the Gate.
"""
import pandas as pd

clean = pd.read_csv("clean.csv")
unit_price = clean["amount"] / clean["units"]
median = unit_price.groupby(clean["product"]).transform("median")
reason = pd.Series("", index=clean.index)
reason[unit_price > 5 * median] = "unit price over 5x the product median"
reason[clean["amount"] < 0] = "negative amount"
flagged = clean[reason != ""].assign(reason=reason[reason != ""], action="drop")
flagged[["order_id", "region", "product", "units", "amount", "reason", "action"]].to_csv(
    "review.csv", index=False
)
print(f"{len(flagged)} of {len(clean)} orders flagged for review")
flagged
