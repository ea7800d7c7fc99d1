"""What bounds a crawl right now: politeness, the network, the CPU or storage."""
