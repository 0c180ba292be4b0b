"""Pipelines written in a library's own format, resolved into catalog steps."""
