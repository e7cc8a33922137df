"""Emulators of remote services the collection talks to, for tests (not shipped: see galaxy.yml build_ignore)."""
