"""The local platform: the system under test as processes on one machine."""
