"""An item pipeline for tests: it raises for every page whose URL contains ``/p/3.html``,
as a pipeline with a bug on one page (or a full disk) would."""


class FailOnePage:
    def process_item(self, item):
        if "/p/3.html" in getattr(item, "url", ""):
            raise OSError(28, "No space left on device")
        return item
