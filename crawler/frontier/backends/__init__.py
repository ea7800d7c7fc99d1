"""Frontier backends: each keeps the state of the contract in ``crawler.frontier.api``."""
