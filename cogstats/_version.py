"""The package version: a leaf module (it imports nothing), read by whatever records it."""

__version__ = "0.1.0"
