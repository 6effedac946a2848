"""Reproducible benchmarks of praxis against its peers: ``python -m benchmarks.compare``.

Everything a benchmark needs (data, flows, notebooks, run folders) is generated under
``benchmarks/work/`` and removed afterwards; results go to ``benchmarks/results/``.
"""
