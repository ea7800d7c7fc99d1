"""DATA_DIR: one absolute directory for the crawl's relative data paths."""

from __future__ import annotations

import pytest
from scrapy.settings import Settings

from crawler.paths import data_path


def test_relative_paths_and_defaults_go_under_data_dir(tmp_path):
    settings = Settings({"DATA_DIR": str(tmp_path), "FRONTIER_DIR": "state/frontier"})
    assert data_path(settings, "FRONTIER_DIR") == str(tmp_path / "state/frontier")
    assert data_path(settings, "STORE_URI") == str(tmp_path / "crawl-data")
    assert data_path(settings, "STORE_SPOOL_DIR") == str(tmp_path / "crawl-spool")


def test_absolute_paths_and_uris_are_kept_as_they_are(tmp_path):
    settings = Settings({"DATA_DIR": str(tmp_path), "FRONTIER_DIR": "/srv/state",
                         "STORE_URI": "s3://bucket/pages", "STORE_SPOOL_DIR": "/var/spool/crawler"})
    assert data_path(settings, "FRONTIER_DIR") == "/srv/state"
    assert data_path(settings, "STORE_URI") == "s3://bucket/pages"
    assert data_path(settings, "STORE_SPOOL_DIR") == "/var/spool/crawler"
    assert data_path(Settings({"DATA_DIR": str(tmp_path), "STORE_URI": "file:///srv/pages"}),
                     "STORE_URI") == "file:///srv/pages"


def test_without_data_dir_paths_stay_relative_to_the_working_directory():
    assert data_path(Settings(), "STORE_URI") == "crawl-data"
    assert data_path(Settings({"DATA_DIR": "", "FRONTIER_DIR": "state"}), "FRONTIER_DIR") == "state"


def test_a_relative_data_dir_is_refused_naming_the_setting():
    with pytest.raises(ValueError, match="DATA_DIR 'var/crawler' is relative"):
        data_path(Settings({"DATA_DIR": "var/crawler"}), "STORE_URI")
