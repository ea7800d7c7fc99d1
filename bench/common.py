"""Helpers shared by the benchmark scripts (run them as ``python bench/<name>.py``)."""

from __future__ import annotations

import math
import os
import platform
from collections.abc import Sequence
from typing import Any

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


class WebLogRun:
    """A crawl's span and pages/s as the test web's log shows them, for the result types of
    the scripts that crawl it: each has ``records`` (the web's request records) and a
    ``pages`` count of its own."""

    records: Sequence[Any]
    pages: int

    @property
    def span(self) -> float:
        """Seconds from the first request's start to the last response's end."""
        if not self.records:
            return math.nan
        return max(r.end for r in self.records) - min(r.start for r in self.records)

    @property
    def rate(self) -> float:
        """Pages a second over the span."""
        return self.pages / self.span if self.span > 0 else math.nan
