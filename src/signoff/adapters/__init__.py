"""Adapters to agent frameworks. Each imports its framework lazily: install the extra."""
