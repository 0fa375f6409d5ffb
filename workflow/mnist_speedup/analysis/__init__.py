"""The analysis: statistics, comparisons, checks and the tidy tables."""
