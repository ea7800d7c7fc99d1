"""Shared fixtures. Tests import the test web and crawl helpers from this directory."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from crawling import run_crawl


@pytest.fixture
def crawl():
    return run_crawl
