"""What ``POST /crawls`` accepts: seeds checked as the command line checks them, and only
crawl-shaping settings, each of the type it takes. Anything else is refused by name."""

from __future__ import annotations

import json
from typing import Any

from scrapy.settings import BaseSettings

from crawler.config import setting_problems
from crawler.spiders.arguments import ArgumentError, check_arguments

# The settings a request may set, by the JSON type each takes: politeness, budgets, depth
# and trap limits, revisits, continuous mode and close conditions. Nothing that names a
# class, a module or a path, and nothing that makes the crawl less polite than robots.txt.
ALLOWED_SETTINGS: dict[str, str] = {
    "POLITENESS_MIN_DELAY": "number", "POLITENESS_DELAY_FACTOR": "number",
    "POLITENESS_MAX_DELAY": "number", "POLITENESS_BACKOFF_MAX": "number",
    "POLITENESS_PER_IP": "bool", "ROBOTSTXT_CRAWL_DELAY": "bool", "ROBOTSTXT_CRAWL_DELAY_MAX": "number",
    "CONCURRENT_REQUESTS": "int", "DOWNLOAD_TIMEOUT": "number",
    "HOST_PAGE_BUDGET": "int", "DEPTH_LIMIT": "int", "URLLENGTH_LIMIT": "int", "TRAP_SEGMENT_REPEATS": "int",
    "SITEMAP_FOLLOW": "bool", "FRONTIER_RETRY_DELAYS": "numbers",
    "REVISIT_INTERVAL": "number", "REVISIT_MIN_INTERVAL": "number", "REVISIT_MAX_INTERVAL": "number",
    "REVISIT_WASTE_COST": "number", "REVISIT_EVIDENCE": "int", "REVISIT_HOT_SHARE": "number",
    "CRAWL_CONTINUOUS": "bool",
    "CLOSESPIDER_TIMEOUT": "number", "CLOSESPIDER_ITEMCOUNT": "int", "CLOSESPIDER_PAGECOUNT": "int",
    "CLOSESPIDER_ERRORCOUNT": "int",
}
FIELDS = ("seeds", "max_pages", "scope", "settings")


class BadRequest(ValueError):
    """The request cannot be used; the message says which part and why (HTTP 400)."""


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value >= 0


_CHECKS = {
    "bool": (lambda v: isinstance(v, bool), "true or false"),
    "int": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0, "a whole number >= 0"),
    "number": (_is_number, "a number >= 0"),
    "numbers": (lambda v: isinstance(v, list) and bool(v) and all(map(_is_number, v)),
                "a list of numbers >= 0"),
}


def _as_setting(value: Any) -> str:
    """The ``-s NAME=value`` text of a checked value."""
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


def parse_spec(body: bytes, base: BaseSettings) -> dict:
    """The crawl a ``POST /crawls`` body asks for, as ``{"seeds": [...], "scope": ...,
    "max_pages": N, "settings": {NAME: text}}``; raises :class:`BadRequest`."""
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise BadRequest(f"the body is not JSON: {error}") from None
    except RecursionError:  # the C decoder's guard against deep nesting
        raise BadRequest("the body's JSON is nested too deeply") from None
    if not isinstance(data, dict):
        raise BadRequest("the body must be a JSON object with \"seeds\"")
    unknown = sorted(set(data) - set(FIELDS))
    if unknown:
        raise BadRequest(f"unknown field(s) {', '.join(map(repr, unknown))}; known: {', '.join(FIELDS)}")
    seeds = data.get("seeds")
    if not isinstance(seeds, list) or not seeds or not all(isinstance(s, str) for s in seeds):
        raise BadRequest("\"seeds\" is required: a non-empty list of URL strings")
    scope, max_pages = data.get("scope"), data.get("max_pages")
    if scope is not None and not isinstance(scope, str):
        raise BadRequest(f"\"scope\" must be a string, not {scope!r}")
    if max_pages is not None and not (isinstance(max_pages, int) and not isinstance(max_pages, bool)):
        raise BadRequest(f"\"max_pages\" must be a whole number >= 0, not {max_pages!r}")
    settings = data.get("settings", {})
    if not isinstance(settings, dict):
        raise BadRequest("\"settings\" must be an object of NAME: value")
    refused = sorted(name for name in settings if name not in ALLOWED_SETTINGS)
    if refused:
        raise BadRequest(f"setting(s) not allowed: {', '.join(map(str, refused))}; a crawl may set only "
                         + ", ".join(ALLOWED_SETTINGS))
    text = {}
    for name, value in settings.items():
        check, kind = _CHECKS[ALLOWED_SETTINGS[name]]
        if not check(value):
            raise BadRequest(f"setting {name} = {value!r}: must be {kind}")
        text[name] = _as_setting(value)
    effective = base.copy()
    effective.setdict(text, priority="cmdline")
    problems = setting_problems(effective)
    if problems:
        raise BadRequest("bad setting(s):\n" + "\n".join(problems))
    try:
        seed_urls, scope, cap = check_arguments(seeds, scope, max_pages, effective)
    except ArgumentError as error:
        raise BadRequest(str(error)) from None
    return {"seeds": seed_urls, "scope": scope, "max_pages": cap, "settings": text}
