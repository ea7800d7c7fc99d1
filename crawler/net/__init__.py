"""The network edge: host spellings to addresses, the address guard, the DNS cache."""
