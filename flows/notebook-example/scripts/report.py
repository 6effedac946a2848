"""A short Markdown report of the stations' statistics."""

import pandas as pd

stations = pd.read_csv("stations.csv")
warmest = stations.sort_values("mean_temp_c", ascending=False).iloc[0]
wettest = stations.sort_values("rain_mm", ascending=False).iloc[0]
lines = [
    "# Weather stations",
    "",
    f"Warmest on average: **{warmest['station']}** ({warmest['mean_temp_c']:.1f} °C).",
    f"Wettest: **{wettest['station']}** ({wettest['rain_mm']:.1f} mm).",
    "",
    "```",
    stations.to_string(index=False),
    "```",
    "",
]
with open("report.md", "w") as fh:
    fh.write("\n".join(lines))
print("\n".join(lines[:4]))
