"""The engine: everything about a LoadTest that needs no cluster."""
