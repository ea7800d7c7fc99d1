"""URL trap rules: tests on a normalised URL alone, pure code."""

from __future__ import annotations


def has_repeated_segments(normalized_url: str, repeats: int = 3) -> bool:
    """True if a run of 1+ path segments occurs ``repeats`` times in a row.

    Catches the relative-link trap (a page linking ``a/b/`` relative to itself
    yields ``/a/b/a/b/a/b/...``), like Heritrix's PathologicalPathDecideRule.
    Only the path is examined; a trailing slash does not make an extra segment
    and a run made only of empty segments does not count. ``repeats`` must be >= 2.
    """
    if repeats < 2:
        raise ValueError("repeats must be at least 2")
    scheme_end = normalized_url.find("://")
    start = normalized_url.find("/", scheme_end + 3 if scheme_end >= 0 else 0)
    if start < 0:
        return False
    question = normalized_url.find("?", start)
    path = normalized_url[start + 1 : question if question >= 0 else None]
    segments = path.split("/")
    if segments[-1] == "":
        segments.pop()
    count = len(segments)
    if count < repeats or len(set(segments)) == count:
        return False
    for period in range(1, count // repeats + 1):
        needed = period * (repeats - 1)
        run = 0
        for i in range(count - period):
            if segments[i] == segments[i + period]:
                run += 1
                if run >= needed:
                    first = i + 1 - needed
                    if any(segments[first : first + period]):
                        return True
            else:
                run = 0
    return False
