"""The report's sections, one module each; the order is ``markdown.SECTIONS``."""
