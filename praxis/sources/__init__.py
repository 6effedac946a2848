"""The data sources of agent extracts: the flow's ``database:`` and the phase's tabular inputs.

``source`` reads the URL as written (checked by ``praxis check``, resolved only at connect
time), ``connect`` opens it read-only and bounded through SQLAlchemy, ``files`` makes the
phase's CSV and Parquet inputs tables of DuckDB, and ``sink`` writes a result as CSV, TSV or
Parquet within the caps of one extract.
"""
