"""A short Markdown report of the month, with a chart of revenue by week."""
import matplotlib

matplotlib.use("Agg")  # no display in the sandbox: draw to files
import matplotlib.pyplot as plt
import pandas as pd

by_region = pd.read_csv("by_region.csv")
by_week = pd.read_csv("by_week.csv")
review = pd.read_csv("review.csv")
total = by_region["revenue"].sum()

fig, ax = plt.subplots(figsize=(6, 3))
ax.bar(by_week["week"].astype(str), by_week["revenue"], color="#4878a8")
ax.set_xlabel("ISO week")
ax.set_ylabel("revenue")
ax.set_title("Revenue by week")
fig.tight_layout()
fig.savefig("revenue_by_week.png", dpi=100)

best = by_region.iloc[0]
lines = [
    "# Sales report",
    "",
    f"Revenue: **{total:,.2f}** from {by_region['orders'].sum()} orders.",
    f"Best region: **{best['region']}** ({best['revenue']:,.2f}).",
    f"Orders left out after review: {int((review['action'].str.lower() == 'drop').sum())}.",
    "",
    "## By region",
    "",
    "```",
    by_region.to_string(index=False),
    "```",
    "",
    "## By week",
    "",
    "![Revenue by week](revenue_by_week.png)",
    "",
    "```",
    by_week.to_string(index=False),
    "```",
    "",
]
with open("report.md", "w") as fh:
    fh.write("\n".join(lines))
print("\n".join(lines[:5]))
