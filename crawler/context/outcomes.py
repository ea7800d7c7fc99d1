"""``PageOutcomes``: what the pipelines decided of each page, for the frontier's scheduler.

Scrapy's ``process_item`` gets no request, and a URL's lease is on its request: so the
pipelines tell the page's outcome here by typed calls (``judged``, ``stored``), and the
scheduler takes it once Scrapy is done with the page (``item_scraped``, or
``page_processed`` for a captured page), where it has the response and so the lease.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from scrapy import signals

if TYPE_CHECKING:
    from collections.abc import Iterable

    from scrapy.signalmanager import SignalManager

    from crawler.items import Page


@dataclass
class PageOutcome:
    """One page's outcome in the pipelines."""

    revisit_state: dict | None = None  # the state its URL's next visit starts from
    stored: bool = False  # its records are written
    awaiting: tuple[str, ...] = ()  # what it waits for to be safe: uploads, an fsync batch


class PageOutcomes:
    """The outcomes of the pages in the pipelines, by page (the item itself).

    It keeps nothing until a taker is attached (``attach``: the frontier scheduler), so
    the pipelines cost nothing in a project that schedules its own way. A page dropped or
    failed in a pipeline is forgotten; the taker takes every other page once."""

    def __init__(self) -> None:
        self._pages: dict[int, tuple[Page, PageOutcome]] | None = None

    def attach(self, signal_manager: SignalManager) -> None:
        """Start keeping outcomes; forget the pages a pipeline drops or fails on."""
        if self._pages is None:
            self._pages = {}
            for signal in (signals.item_dropped, signals.item_error):
                signal_manager.connect(self._forget, signal=signal)

    def judged(self, page: Page, revisit_state: dict) -> None:
        """``page``'s URL is visited again from ``revisit_state`` (``RevisitPipeline``)."""
        outcome = self._outcome(page)
        if outcome is not None:
            outcome.revisit_state = revisit_state

    def stored(self, page: Page, awaiting: Iterable[str], revisit_state: dict | None) -> None:
        """``page`` is written; safe once each of ``awaiting`` is (``PageStorePipeline``),
        with the revisit state it completed (the payload its next visit compares with)."""
        outcome = self._outcome(page)
        if outcome is not None:
            outcome.stored, outcome.awaiting = True, tuple(sorted(awaiting))
            if revisit_state is not None:
                outcome.revisit_state = revisit_state

    def take(self, page: Page) -> PageOutcome | None:
        """The outcome of a page Scrapy is done with (once), or None: nothing was decided."""
        if self._pages is None:
            return None
        entry = self._pages.pop(id(page), None)
        return None if entry is None else entry[1]

    def _outcome(self, page: Page) -> PageOutcome | None:
        if self._pages is None:
            return None
        entry = self._pages.get(id(page))
        if entry is None:  # the page is held with its outcome, so its id stays its own
            entry = self._pages[id(page)] = (page, PageOutcome())
        return entry[1]

    def _forget(self, item: object) -> None:
        if self._pages is not None:
            self._pages.pop(id(item), None)
