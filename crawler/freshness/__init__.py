"""Freshness: when to fetch a page again, from how often it has changed."""
