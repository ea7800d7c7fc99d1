"""robots.txt on the test web: how a site serves it and how the ground truth obeys it."""

from __future__ import annotations

import re

from testweb_pages import Answer, error_answer
from testweb_sites import Site


def robots_answer(site: Site) -> Answer:
    """``/robots.txt`` as the site's ``robots_txt`` and ``robots_status`` say."""
    text = site.robots_txt
    status = site.robots_status or (404 if text is None else 200)
    if text is None and status != 200:
        return error_answer(status, "No robots.txt")
    return Answer(status, {"Content-Type": "text/plain; charset=utf-8"}, body=(text or "").encode())


def robots_rules(robots_txt: str, user_agent: str) -> list[tuple[bool, re.Pattern[str], int]]:
    """Allow/Disallow rules of the group that applies to ``user_agent``."""
    groups: list[tuple[list[str], list[tuple[bool, str]]]] = []
    in_agents = False
    for raw in robots_txt.splitlines():
        line = raw.split("#", 1)[0].strip()
        if ":" not in line:
            continue
        key, value = (s.strip() for s in line.split(":", 1))
        key = key.lower()
        if key == "user-agent":
            if not in_agents:
                groups.append(([], []))
            groups[-1][0].append(value.lower())
            in_agents = True
        elif key in ("allow", "disallow") and groups:
            in_agents = False
            if value:
                groups[-1][1].append((key == "allow", value))
    ua = user_agent.lower()
    chosen = [g for g in groups if any(a != "*" and a in ua for a in g[0])]
    if not chosen:
        chosen = [g for g in groups if "*" in g[0]]
    rules = []
    for _, group_rules in chosen:
        for allow, pattern in group_rules:
            anchored = pattern.endswith("$")
            body = pattern[:-1] if anchored else pattern
            regex = ".*".join(re.escape(piece) for piece in body.split("*"))
            rules.append((allow, re.compile(regex + ("$" if anchored else "")), len(pattern)))
    return rules


def robots_allows(rules: list[tuple[bool, re.Pattern[str], int]], target: str) -> bool:
    """Longest matching rule wins, Allow on a tie (Google's and Protego's rule)."""
    best: tuple[int, bool] | None = None
    for allow, regex, length in rules:
        if regex.match(target) and (best is None or (length, allow) > best):
            best = (length, allow)
    return True if best is None else best[1]
