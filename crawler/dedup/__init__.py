"""Content seen: exact and near-duplicate texts (sha256 + simhash) and where their index lives."""
