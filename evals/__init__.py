"""The frozen-corpus research benchmark and the performance benchmarks (see docs/evaluation.md)."""
