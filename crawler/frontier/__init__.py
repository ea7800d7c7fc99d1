"""The URL frontier: front queues by priority, one back queue per host, a heap of
earliest-allowed times, and leases. ``policy`` holds the rules, backends the state."""
