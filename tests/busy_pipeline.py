"""An item pipeline for tests that spends 40 ms of CPU on every item: a crawl bound by
its CPU, as one with heavy parsing or enrichment is."""

import time


class BurnCpu:
    def process_item(self, item):
        end = time.process_time() + 0.04
        while time.process_time() < end:
            pass
        return item
