"""Test support that ships with the library: loopback provider servers."""
