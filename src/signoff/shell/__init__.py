"""The bash analyser and the command models: what a shell command line does, as data."""
