"""Revenue by region and by ISO week, leaving out the orders the reviewer marked drop."""
import pandas as pd

clean = pd.read_csv("clean.csv", parse_dates=["date"])
review = pd.read_csv("review.csv")
dropped = set(review.loc[review["action"].str.strip().str.lower() == "drop", "order_id"])
kept = clean[~clean["order_id"].isin(dropped)]
print(f"leaving out {len(dropped)} order(s): {sorted(dropped)}")

by_region = (
    kept.groupby("region")
    .agg(orders=("order_id", "count"), units=("units", "sum"), revenue=("amount", "sum"))
    .round(2)
    .sort_values("revenue", ascending=False)
)
by_region.to_csv("by_region.csv")
by_week = kept.assign(week=kept["date"].dt.isocalendar().week).groupby("week")["amount"].sum()
by_week.round(2).rename("revenue").to_csv("by_week.csv")
by_region
