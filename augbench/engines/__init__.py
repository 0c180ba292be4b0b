"""Timing engines, one per regime. They run inside a library's environment."""
