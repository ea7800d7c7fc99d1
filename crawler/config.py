"""The check of the crawler's settings before a crawl starts.

A bad ``-s`` value (``POLITENESS_MIN_DELAY=fast``) would otherwise surface as an
exception deep in a component's ``from_crawler`` and Scrapy's "Engine slot not
assigned"; here every setting of :mod:`crawler.defaults` is read with the getter its
default's type implies, so the message names the setting, the value and what it takes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from crawler import defaults
from crawler.extract.page import TEXT_MODES
from crawler.frontier.policy import MAX_LEVELS, RetryPolicy
from crawler.net.addresses import AddressPolicy
from crawler.net.resolver import nameserver
from crawler.paths import checked_data_dir
from crawler.store.files import checked_store_uri
from crawler.urls.links import SCOPES
from crawler.urls.normalize import UrlNormalizer

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

# Settings that take one of a few words.
CHOICES: dict[str, tuple[str, ...]] = {
    "CRAWL_SCOPE": SCOPES,
    "SEEN_SET": ("exact", "bloom"),
    "TEXT_EXTRACTION": TEXT_MODES,
}


@dataclass(frozen=True)
class Range:
    """The values a number setting takes: ``low`` to ``high``, each end included unless
    ``low_open`` or ``high_open`` excludes it."""

    low: float
    high: float
    low_open: bool = False
    high_open: bool = False

    def __contains__(self, number: float) -> bool:
        above = number > self.low if self.low_open else number >= self.low
        below = number < self.high if self.high_open else number <= self.high
        return above and below

    def said(self, whole: bool) -> str:
        """What the setting takes, for its error message."""
        kind = "a whole number" if whole else "a number"
        excluded = [f"{end:g}" for end, is_open in ((self.low, self.low_open), (self.high, self.high_open))
                    if is_open]
        return (f"{kind} from {self.low:g} to {self.high:g}"
                + (f", {' and '.join(excluded)} excluded" if excluded else ""))


# Number settings that take only a range.
RANGES: dict[str, Range] = {
    "FRONTIER_PRIORITY_LEVELS": Range(1, MAX_LEVELS),
    "STORE_GZIP_LEVEL": Range(0, 3),  # ISA-L's levels
    # Shares: a rate of 1 would never demote (TRAP_DUPLICATE_WINDOW = 0 turns demotion off);
    # a Bloom filter sized for 0 or 1 errors has no size; hot pages may take every fetch.
    "TRAP_DUPLICATE_RATE": Range(0, 1, high_open=True),
    "SEEN_SET_ERROR_RATE": Range(0, 1, low_open=True, high_open=True),
    "REVISIT_HOT_SHARE": Range(0, 1, low_open=True),
}


def _drop_params_pattern(value: Any) -> UrlNormalizer:
    """The normaliser of ``URL_DROP_PARAMS``; a pattern ``re`` cannot compile is a ValueError
    (``re.error`` is not one)."""
    try:
        return UrlNormalizer(value)
    except re.error as error:
        raise ValueError(f"not a regular expression: {error}") from None


# Settings read by a parser of their own, which says what is wrong.
PARSERS: dict[str, Callable[[Any], object]] = {
    "FRONTIER_RETRY_DELAYS": RetryPolicy.parse,
    "URL_DROP_PARAMS": _drop_params_pattern,
    "DNS_NAMESERVERS": lambda value: [nameserver(spec) for spec in (
        value.split(",") if isinstance(value, str) else value) if str(spec).strip()],
    "NETWORK_ALLOW": lambda value: AddressPolicy(allow=value.split(",") if isinstance(value, str) else value),
    "DATA_DIR": lambda value: checked_data_dir(str(value)),
    "STORE_URI": lambda value: checked_store_uri(str(value)),
}


# Scrapy's own number settings a crawl is often given with -s, each with a value of the
# type Scrapy reads it as: a bad one surfaced as a traceback from deep in Scrapy.
SCRAPY_NUMBERS: dict[str, int | float] = {
    "CONCURRENT_REQUESTS": 16, "DOWNLOAD_DELAY": 0.0, "DOWNLOAD_TIMEOUT": 180.0, "CLOSESPIDER_TIMEOUT": 0.0,
    "CLOSESPIDER_ITEMCOUNT": 0, "CLOSESPIDER_PAGECOUNT": 0, "CLOSESPIDER_ERRORCOUNT": 0,
}


class SettingError(ValueError):
    """One or more settings cannot be used; the message names each one."""


def _getter(settings: BaseSettings, default: Any) -> tuple[Callable[[str], Any], str] | None:
    if isinstance(default, bool):
        return settings.getbool, "true or false"
    if isinstance(default, int):
        return settings.getint, "a whole number >= 0"
    if isinstance(default, float):
        return settings.getfloat, "a number >= 0"
    if isinstance(default, list):
        return settings.getlist, "a list"
    return None


def setting_problems(settings: BaseSettings) -> list[str]:
    """One line per setting of ours, or number setting of Scrapy's (:data:`SCRAPY_NUMBERS`),
    whose value its components cannot use."""
    problems = []
    ours = {name: getattr(defaults, name) for name in vars(defaults) if name.isupper()}
    for name, default in (ours | SCRAPY_NUMBERS).items():
        value = settings.get(name)
        if value is None:
            continue
        if name in PARSERS:
            try:
                PARSERS[name](value)
            except ValueError as error:  # its message may name the setting already
                said = str(error)
                problems.append(f"  {said}" if said.startswith(name) else f"  {name} = {value!r}: {said}")
            continue
        getter = _getter(settings, default)
        if getter is not None:
            read, kind = getter
            try:
                number = read(name)
            except (TypeError, ValueError):
                problems.append(f"  {name} = {value!r}: must be {kind}")
                continue
            if name in RANGES and number not in RANGES[name]:  # NaN is in no range
                problems.append(f"  {name} = {value!r}: must be {RANGES[name].said(isinstance(number, int))}")
            elif isinstance(number, int | float) and not isinstance(number, bool) and not (
                    0 <= number < math.inf):  # NaN too: float("nan") is read, and is not < 0
                problems.append(f"  {name} = {value!r}: must be {kind}")
        elif name in CHOICES and value not in CHOICES[name]:
            problems.append(f"  {name} = {value!r}: must be one of {', '.join(CHOICES[name])}")
    return problems


def check_settings(settings: BaseSettings) -> None:
    """Raise :class:`SettingError` naming every setting that cannot be used."""
    problems = setting_problems(settings)
    if problems:
        raise SettingError("bad setting(s), nothing was fetched:\n" + "\n".join(problems))
