"""Fakes at the edges, each recording what it was asked."""
