"""The period's orders without refunds (negative amounts), with their ISO week."""
import pandas as pd

orders = pd.read_parquet("orders.parquet")
kept = orders[orders["amount"].astype(float) > 0].copy()
kept["day"] = pd.to_datetime(kept["day"])
kept["week"] = kept["day"].dt.strftime("%G-W%V")
kept["day"] = kept["day"].dt.date
print(f"{len(orders)} orders, {len(orders) - len(kept)} refund(s) left out")
columns = ["order_id", "day", "week", "region", "product", "units", "amount"]
kept[columns].to_csv("clean.csv", index=False)
