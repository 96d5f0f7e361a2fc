"""Checks and measures of a prepared split, as pure numpy functions (no folder logic)."""
