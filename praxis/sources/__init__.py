"""The data sources of agent extracts: the flow's ``database:`` and the phase's tabular inputs.

``source`` reads what flow.yaml names (a connection of the person's profile, or a database
file of the flow) and what a profile connection is opened with; ``fetch`` runs one extract in
a ``worker`` process (a clean environment, a capped address space), where ``connect`` opens
the source read-only and bounded with its own driver, makes the phase's CSV and Parquet
inputs tables of DuckDB, and ``sink`` writes the result as CSV, TSV or Parquet within the
caps of one extract.
"""
