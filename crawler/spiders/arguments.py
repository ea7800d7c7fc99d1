"""The ``web`` spider's arguments (seeds, scope, page cap), checked before anything is fetched."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from difflib import get_close_matches
from pathlib import Path
from typing import TYPE_CHECKING

from crawler import defaults
from crawler.context.connection import uses_redis
from crawler.urls.links import SCOPES
from crawler.urls.normalize import UrlNormalizer

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings


class ArgumentError(ValueError):
    """A spider argument cannot be used (a bad seed, scope or page cap); the message
    names each bad value and why."""


def seed_problem(raw: str, normalized: str | None) -> str | None:
    """Why ``raw`` cannot be a seed, given what it normalised to (None: it can), for the
    messages of a bad seed argument and of a rejected pushed seed."""
    if any(c.isspace() for c in raw.strip()):
        # Normalising would run "A B" together into one URL nobody asked for.
        return "white space in a URL: separate seeds with commas (a space in a URL is %20)"
    if normalized is not None:
        return None
    if _names_a_file(raw):
        return "a file name, but seed files go alone: -a seeds=FILE"
    if "://" not in raw and ":" not in raw.split("/")[0]:
        return f"no scheme: did you mean http://{raw} ?" if "." in raw else "not a URL or a file"
    scheme = raw.split(":", 1)[0].lower()
    if scheme not in ("http", "https"):
        return f"scheme {scheme!r} is not http or https"
    return "not a valid http(s) URL (bad host or port)"


# Suffixes of seed files; no top-level domain is spelled so.
SEED_FILE_SUFFIXES = (".txt", ".csv", ".tsv", ".lst", ".list", ".urls", ".seeds")


def _names_a_file(value: str) -> bool:
    """A single argument that is meant as a seed file, not a URL: a path or a file name."""
    return "," not in value and ":" not in value and (
        value.startswith(("/", "./", "../", "~")) or Path(value).suffix.lower() in SEED_FILE_SUFFIXES)


def parse_seeds(value: str | list[str] | None, normalize: UrlNormalizer) -> list[str]:
    """Normalised seed URLs from ``URL[,URL...]``, a file (one URL per line, ``#`` comments)
    or a list; raises :class:`ArgumentError` naming every bad seed and why."""
    if not value:
        raise ArgumentError("no seeds given: use -a seeds=URL[,URL...] or -a seeds=FILE")
    if isinstance(value, str):
        if "://" not in value and Path(value).is_file():
            lines = Path(value).read_text(encoding="utf-8").splitlines()
            raw = [line.split("#", 1)[0].strip() for line in lines]
        elif _names_a_file(value):
            raise ArgumentError(f"seed file {value!r} does not exist (looked for {Path(value).resolve()})")
        else:
            raw = [part.strip() for part in value.split(",")]
    else:
        raw = [str(part).strip() for part in value]
    raw = [r for r in raw if r]
    seeds: dict[str, None] = {}  # ordered, and a million seeds do not cost a million scans
    problems = []
    for r in raw:
        url = normalize(r)
        problem = seed_problem(r, url)
        if problem:
            problems.append(f"  {r!r}: {problem}")
        else:
            assert url is not None  # seed_problem names a problem for a URL that does not normalise
            seeds[url] = None
    if problems:
        raise ArgumentError("bad seed(s), nothing was fetched:\n" + "\n".join(problems))
    if not seeds:
        raise ArgumentError(f"no seeds in {value!r}")
    return list(seeds)


def check_argument_names(names: Iterable[str], spider: str, arguments: Iterable[str],
                         attributes: Callable[[str], bool]) -> None:
    """Raise :class:`ArgumentError` naming each ``-a`` name the spider neither takes among its
    ``arguments`` nor has as an attribute (``attributes(name)``): Scrapy would set it as a new
    attribute, and a misspelt ``max_page`` would go unheeded. Names starting with ``_``
    (scrapyd's ``_job``) pass."""
    known = list(arguments)
    unknown = [n for n in names if n not in known and not n.startswith("_") and not attributes(n)]
    if unknown:
        named = ", ".join(f"{n!r}" + "".join(f" (did you mean {m}?)" for m in get_close_matches(n, known, 1))
                          for n in unknown)
        raise ArgumentError(f"unknown argument(s) of the {spider!r} spider: {named}; "
                            f"it takes {', '.join(known)}")


def check_arguments(
    seeds: str | list[str] | None,
    scope: str | None,
    max_pages: int | str | None,
    settings: BaseSettings,
) -> tuple[list[str], str, int]:
    """(normalised seeds, scope, page cap) from the spider's arguments and settings;
    raises :class:`ArgumentError` before anything is fetched."""
    normalize = UrlNormalizer.from_settings(settings)
    # A worker of a Redis crawl may start without seeds: they can be pushed later.
    seed_urls = [] if not seeds and uses_redis(settings) else parse_seeds(seeds, normalize)
    scope = scope or settings.get("CRAWL_SCOPE", defaults.CRAWL_SCOPE)
    if scope not in SCOPES:
        raise ArgumentError(f"scope must be one of {', '.join(SCOPES)}, not {scope!r}")
    if max_pages is None:
        max_pages = settings.getint("CRAWL_MAX_PAGES", defaults.CRAWL_MAX_PAGES)
    try:
        cap = int(max_pages)
    except ValueError:
        cap = -1
    if cap < 0:
        raise ArgumentError(f"max_pages must be a whole number >= 0, not {max_pages!r}")
    return seed_urls, scope, cap
