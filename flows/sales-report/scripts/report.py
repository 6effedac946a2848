"""A short Markdown report of the month."""
import pandas as pd

by_region = pd.read_csv("by_region.csv")
by_week = pd.read_csv("by_week.csv")
review = pd.read_csv("review.csv")
total = by_region["revenue"].sum()
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
    "```",
    by_week.to_string(index=False),
    "```",
    "",
]
with open("report.md", "w") as fh:
    fh.write("\n".join(lines))
print("\n".join(lines[:5]))
