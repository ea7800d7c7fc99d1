"""What a page says: its visible text and title, from the lxml tree Scrapy already parsed."""
