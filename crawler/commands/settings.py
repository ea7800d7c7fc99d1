"""``scrapy settings`` as a crawl sees them: with the project's add-ons applied."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

from scrapy.commands.settings import Command as ScrapySettingsCommand
from scrapy.settings import BaseSettings
from scrapy.utils.conf import build_component_list
from scrapy.utils.misc import load_object

from crawler.addon import PoliteCrawler

if TYPE_CHECKING:
    import argparse


class Command(ScrapySettingsCommand):
    """Scrapy's ``settings`` command, after the ``update_settings`` of each add-on in
    ``ADDONS`` that needs no crawler (Scrapy's own command applies none, so it shows
    values no crawl uses: ``DEPTH_LIMIT`` 0 where the add-on sets 20); components are
    printed by their import paths."""

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        settings = self.settings.copy()
        for path in build_component_list(settings["ADDONS"]):
            addon_class = load_object(path)
            if hasattr(addon_class, "update_settings") and not _required_arguments(addon_class) and (
                    issubclass(addon_class, PoliteCrawler) or not hasattr(addon_class, "from_crawler")):
                addon_class().update_settings(settings)
        for name, value in list(settings.items()):
            if isinstance(value, BaseSettings) and any(isinstance(key, type) for key in value):
                settings.set(name, {_path(key): order for key, order in value.items()},
                             priority=settings.getpriority(name) or 0)
        self.settings = settings
        super().run(args, opts)


def _path(component: object) -> object:
    """A component dict's key as a project names it: a class by its import path."""
    return f"{component.__module__}.{component.__qualname__}" if isinstance(component, type) else component


def _required_arguments(cls: type) -> bool:
    """Whether ``cls()`` needs arguments (then only a crawler could build it)."""
    return any(p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
               for p in inspect.signature(cls).parameters.values())
