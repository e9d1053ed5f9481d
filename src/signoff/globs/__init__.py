"""Matching languages below the policy and the shell analysis: RE2 and path globs.

``linear`` wraps RE2, so an agent's text can never make a match backtrack;
``pathglob`` turns path-aware globs into it and says which of a set a path matches.
"""
