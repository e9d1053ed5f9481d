"""Gemini CLI: its ``BeforeTool`` / ``AfterTool`` hooks answered by the gate (``hook``),
and the hook entries written into its settings (``settings``)."""

from signoff.adapters.gemini.hook import AGENT, Gemini, after_tool, before_tool
from signoff.adapters.gemini.settings import install_hooks

__all__ = ["AGENT", "Gemini", "after_tool", "before_tool", "install_hooks"]
