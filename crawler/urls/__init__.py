"""URL policy: normalisation, 64-bit fingerprints, host keys, link following and trap rules."""
