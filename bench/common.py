"""Helpers shared by the benchmark scripts (run them as ``python bench/<name>.py``)."""

from __future__ import annotations

import os
import platform
from collections.abc import Sequence

import scrapy


def fmt_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A right-aligned markdown table."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(str(c).rjust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    sep = "|" + "|".join("-" * (w + 1) + ":" for w in widths) + "|"
    return "\n".join([line(header), sep, *(line(r) for r in rows)])


def machine() -> str:
    """Scrapy and Python versions, CPUs: the first line of every report."""
    return (f"Scrapy {scrapy.__version__}, Python {platform.python_version()}, {os.cpu_count()} CPUs "
            f"({platform.machine()}), {platform.system()}")
