"""Traps that end themselves: learned irrelevant parameters, the soft-404 probe and
duplicate-rate demotion (pure rules), and the store of their per-host learned state."""
