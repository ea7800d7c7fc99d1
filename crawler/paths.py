"""Local paths of the crawl's data, resolved against ``DATA_DIR``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from crawler import defaults

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings


def checked_data_dir(value: str) -> str:
    """``DATA_DIR`` as given, when it is empty or absolute; else ValueError naming it."""
    if value and not os.path.isabs(value):
        raise ValueError(f"DATA_DIR {value!r} is relative: set it to an absolute directory, or leave it "
                         "empty for the working directory")
    return value


def data_path(settings: BaseSettings, name: str) -> str:
    """The value of setting ``name`` (``FRONTIER_DIR``, ``STORE_URI``, ``STORE_SPOOL_DIR``),
    a relative local path joined to ``DATA_DIR``; a URI (``s3://``, ``file://``), an
    absolute path, or any path when ``DATA_DIR`` is empty, as it is."""
    data_dir = checked_data_dir(str(settings.get("DATA_DIR", defaults.DATA_DIR) or ""))
    value = str(settings.get(name, getattr(defaults, name)))
    if not data_dir or urlsplit(value).scheme or os.path.isabs(value):
        return value
    return os.path.join(data_dir, value)


def embedded_frontier_path(settings: BaseSettings, crawl_id: str) -> Path:
    """Where the embedded frontier of crawl ``crawl_id`` keeps its state: Scrapy's
    ``JOBDIR`` when set, else ``FRONTIER_DIR/<crawl id>``; the file is ``frontier.sqlite``."""
    directory = settings.get("JOBDIR") or Path(data_path(settings, "FRONTIER_DIR")) / crawl_id
    return Path(directory) / "frontier.sqlite"
