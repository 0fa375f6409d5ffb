"""The figures, one file each (found here by report/outputs.py and report/drawings.py): a literal ``FIGURE``
(its place among the figures, its caption file under workflow/report/, its alt text, and the fewest workloads
and frameworks a config needs for it), which the registry reads as data without importing the file (the
aggregation's rerun digest stays free of drawing code), and ``draw(drawing)``, which the figure job calls.
A new figure is one file here and its caption file."""
