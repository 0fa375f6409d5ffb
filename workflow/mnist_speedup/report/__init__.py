"""The report stage: the registry of figures and tables (:mod:`.outputs`),
the figures (:mod:`.figure`, drawn through :mod:`.drawings`) and the
Markdown report (:mod:`.markdown`, one module per section under
``sections/``).

Kept empty on purpose: the aggregation script reads only the registry, so
that its rerun digest does not follow the figure or the report's code.
"""
