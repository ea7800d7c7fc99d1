"""The shared frontier in Redis: one server, several shards, or a Redis Cluster."""
