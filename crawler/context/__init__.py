"""What one crawl is, for every component: its id, its Redis clients from the settings."""
