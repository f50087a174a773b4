"""Rewriting questions through the bulk engine (filled in by the rewriting stage)."""
