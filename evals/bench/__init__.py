"""Performance benchmarks (``python -m evals.bench``); each module measures one figure."""
